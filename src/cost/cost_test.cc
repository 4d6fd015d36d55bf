#include "suanli/cost.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "suanli/hardware.h"

namespace suanli {
namespace {

TcoAssumptions Defaults() {
  CatalogOptions o;
  auto a = LoadTcoAssumptions(o);
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? *a : TcoAssumptions{};
}

const GpuSpec& Gpu(std::string_view id) {
  static const HardwareCatalog hw = [] {
    CatalogOptions o;
    auto c = HardwareCatalog::Load(o);
    EXPECT_TRUE(c.ok());
    return *c;
  }();
  auto g = hw.FindGpu(id);
  EXPECT_TRUE(g.ok());
  return **g;
}

// Round numbers that are easy to check by hand.
TcoInputs Simple() {
  TcoInputs in;
  in.gpu_id = "test";
  in.gpu_purchase_usd = 20000;
  in.server_share_usd = 4000;
  in.network_share_usd = 0;
  in.storage_share_usd = 0;
  in.gpu_power_watts = 800;
  in.host_power_watts = 200;   // 1 kW IT at full load
  in.utilisation = 0.5;
  in.pue = 1.5;
  in.electricity_usd_per_kwh = 0.10;
  in.hosting_usd_per_kw_month = 100;
  in.staff_usd_per_gpu_year = 600;
  in.depreciation_years = 4;
  in.peak_flops = 1e15;        // 1 PFLOP/s
  in.cloud = {{"on-demand", 2.0, "test"}};
  return in;
}

TEST(TcoData, DefaultsParseWithSourcesAndSayIndicative) {
  TcoAssumptions a = Defaults();
  EXPECT_DOUBLE_EQ(a.host_power_watts.value, 575);
  EXPECT_DOUBLE_EQ(a.pue.value, 1.58);
  EXPECT_NE(a.server_share_usd.source.find("assumption"), std::string::npos);
  EXPECT_NE(a.pue.source.find("Uptime"), std::string::npos);
}

TEST(TcoData, EightH100ServerDrawsAboutTenKilowatts) {
  TcoInputs in = TcoInputsFor(Gpu("h100-sxm"), Defaults());
  EXPECT_DOUBLE_EQ(in.gpu_purchase_usd, 30000);
  EXPECT_DOUBLE_EQ(in.gpu_power_watts, 700);
  ASSERT_FALSE(in.cloud.empty());
  EXPECT_EQ(in.cloud[0].kind, "on-demand");
  EXPECT_DOUBLE_EQ(in.cloud[0].usd_per_hour, 2.49);
  EXPECT_NE(in.provenance["gpu_purchase_usd"].find("as of 2025"), std::string::npos) << in.provenance["gpu_purchase_usd"];
  auto r = ComputeTco(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_NEAR(8 * r->it_power_watts, 10200, 1);  // "an 8 x H100 server draws about 10 kW"
}

TEST(TcoFormulas, HandCheckedNumbers) {
  auto r = ComputeTco(Simple());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->capex_usd, 24000);
  EXPECT_DOUBLE_EQ(r->depreciation_usd_per_year, 6000);
  // 1 kW x 0.5 x 8760 h = 4380 kWh IT; x 0.10 = 438 USD power, x 0.5 more for cooling = 219 USD.
  EXPECT_NEAR(r->power_usd_per_year, 438, 1e-9);
  EXPECT_NEAR(r->cooling_usd_per_year, 219, 1e-9);
  EXPECT_NEAR(r->energy_kwh_per_year, 6570, 1e-9);
  EXPECT_NEAR(r->hosting_usd_per_year, 1200, 1e-9);  // 100 USD/kW-month x 1 kW x 12
  EXPECT_NEAR(r->total_usd_per_year, 6000 + 438 + 219 + 1200 + 600, 1e-9);
  ASSERT_TRUE(r->usd_per_used_gpu_hour.has_value());
  EXPECT_NEAR(*r->usd_per_used_gpu_hour, r->total_usd_per_year / 4380, 1e-12);
  // 1 PFLOP/s for 4380 h = 182.5 PFLOP-days.
  EXPECT_NEAR(r->pflop_days_per_year, 182.5, 1e-9);
  ASSERT_TRUE(r->usd_per_pflop_day.has_value());
  EXPECT_NEAR(*r->usd_per_pflop_day, r->total_usd_per_year / 182.5, 1e-9);
  EXPECT_TRUE(r->pflop_days_at_peak);
  ASSERT_EQ(r->rent.size(), 1u);
  const RentComparison& rc = r->rent[0];
  EXPECT_NEAR(rc.usd_per_year, 2.0 * 4380, 1e-9);
  EXPECT_NEAR(rc.usd_per_pflop_day, 48, 1e-9);  // 2 USD/h x 24 h / 1 PFLOP/s
  // Break-even utilisation: fixed (6000 + 1200 + 600) / (8760 x (2.0 - 0.15)).
  ASSERT_TRUE(rc.break_even_utilisation.has_value());
  EXPECT_NEAR(*rc.break_even_utilisation, 7800 / (8760 * 1.85), 1e-12);
  EXPECT_TRUE(rc.owning_cheaper);  // 8,457 USD a year owning vs 8,760 renting at 50% use
}

TEST(TcoFormulas, BreakEvenUtilisationEqualisesTheYearlyCosts) {
  TcoInputs in = Simple();
  auto r = ComputeTco(in);
  ASSERT_TRUE(r.ok());
  const double ube = *r->rent[0].break_even_utilisation;
  in.utilisation = ube;
  auto at = ComputeTco(in);
  ASSERT_TRUE(at.ok());
  EXPECT_NEAR(at->total_usd_per_year, at->rent[0].usd_per_year, 1e-6);
  in.utilisation = std::min(1.0, ube + 0.05);
  auto above = ComputeTco(in);
  EXPECT_TRUE(above->rent[0].owning_cheaper);
  in.utilisation = ube - 0.05;
  auto below = ComputeTco(in);
  EXPECT_FALSE(below->rent[0].owning_cheaper);
}

TEST(TcoFormulas, BreakEvenMonthsPayBackThePurchase) {
  TcoInputs in = Simple();
  in.utilisation = 0.9;
  auto r = ComputeTco(in);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->rent[0].break_even_months.has_value());
  const double m = *r->rent[0].break_even_months;
  const double own = r->capex_usd + r->opex_usd_per_year / 12 * m;
  const double rent = r->rent[0].usd_per_year / 12 * m;
  EXPECT_NEAR(own, rent, 1e-6);
  // Cheap rent: owning never wins.
  in.cloud = {{"spot", 0.10, "test"}};
  auto cheap = ComputeTco(in);
  EXPECT_FALSE(cheap->rent[0].break_even_utilisation.has_value());
  EXPECT_FALSE(cheap->rent[0].break_even_months.has_value());
}

TEST(TcoFormulas, MfuAndTokens) {
  TcoInputs in = Simple();
  in.mfu = 0.4;
  in.tokens_per_s = 1000;
  auto r = ComputeTco(in);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->pflop_days_at_peak);
  EXPECT_NEAR(r->pflop_days_per_year, 182.5 * 0.4, 1e-9);
  EXPECT_NEAR(r->rent[0].usd_per_pflop_day, 48 / 0.4, 1e-9);
  ASSERT_TRUE(r->rent[0].usd_per_million_tokens.has_value());
  EXPECT_NEAR(*r->rent[0].usd_per_million_tokens, 2.0 / 3.6, 1e-12);  // 2 USD per 3.6M tokens
  EXPECT_NEAR(*r->usd_per_million_tokens, *r->usd_per_used_gpu_hour / 3.6, 1e-12);
}

// A GPU that does no work has a yearly cost but no cost per hour of work, per PFLOP-day or per million tokens:
// those are absent (JSON null, "-"), not 0 USD, which would read as free compute. Renting at 0% use costs nothing
// a year, and owning never pays back.
TEST(TcoFormulas, ZeroUtilisationHasNoCostPerUnitOfWork) {
  TcoInputs in = Simple();
  in.utilisation = 0;
  in.tokens_per_s = 1000;
  auto r = ComputeTco(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->total_usd_per_year, 6000);  // depreciation is still paid
  EXPECT_FALSE(r->usd_per_used_gpu_hour.has_value());
  EXPECT_FALSE(r->usd_per_pflop_day.has_value());
  EXPECT_FALSE(r->usd_per_million_tokens.has_value());
  ASSERT_EQ(r->rent.size(), 1u);
  EXPECT_EQ(r->rent[0].usd_per_year, 0);
  EXPECT_FALSE(r->rent[0].break_even_months.has_value());
  EXPECT_FALSE(r->rent[0].owning_cheaper);
  // A rented hour's price per PFLOP-day does not depend on how many hours are rented.
  EXPECT_NEAR(r->rent[0].usd_per_pflop_day, 48, 1e-9);
}

TEST(TcoFormulas, HostingPerRack) {
  TcoInputs in = Simple();
  in.hosting_usd_per_rack_month = 3200;
  in.gpus_per_rack = 32;
  auto r = ComputeTco(in);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->hosting_usd_per_year, 1200, 1e-9);
}

TEST(TcoValidation, BadInputsAreClearErrors) {
  auto expect_bad = [](TcoInputs in, const char* needle) {
    auto r = ComputeTco(in);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
  };
  TcoInputs in = Simple();
  in.utilisation = 1.5;
  expect_bad(in, "utilisation must be within 0..1");
  in = Simple();
  in.server_share_usd = -1;
  expect_bad(in, "--server-usd");
  in = Simple();
  in.pue = 0.9;
  expect_bad(in, "PUE");
  in = Simple();
  in.cloud[0].usd_per_hour = -2;
  expect_bad(in, "on-demand");
  in = Simple();
  in.gpu_purchase_usd = 0;
  expect_bad(in, "no purchase price");
  in.gpu_purchase_usd = -5;
  expect_bad(in, "--gpu-price-usd");
  in = Simple();
  in.mfu = 1.2;
  expect_bad(in, "MFU");
  in = Simple();
  in.depreciation_years = 0;
  expect_bad(in, "depreciation");
  // A typed exponent is an error naming the flag, not a total of 1e304 USD: the flags take the assumption files'
  // bounds (electricity at most 10 USD/kWh, staff 1e7 USD per GPU-year) and amounts per GPU have bounds of their own.
  in = Simple();
  in.electricity_usd_per_kwh = 1e300;
  expect_bad(in, "the electricity price must be at most 10, got 1e+300 (--usd-per-kwh)");
  in = Simple();
  in.gpu_purchase_usd = 1e300;
  expect_bad(in, "--gpu-price-usd");
  in = Simple();
  in.staff_usd_per_gpu_year = 1e8;
  expect_bad(in, "--staff-usd-per-gpu-year");
  in = Simple();
  in.gpu_power_watts = 1e9;
  expect_bad(in, "--gpu-watts");
  in = Simple();
  in.tokens_per_s = 1e-300;
  expect_bad(in, "--tokens-per-s");
  in = Simple();
  in.mfu = 1e-300;
  expect_bad(in, "--mfu");
  in = Simple();
  in.cloud[0].usd_per_hour = 1e9;
  expect_bad(in, "from 0 to 10000");
  in = Simple();
  in.electricity_usd_per_kwh = 10;
  in.staff_usd_per_gpu_year = 1e7;
  EXPECT_TRUE(ComputeTco(in).ok());  // the bounds themselves are accepted
}

TEST(TcoData, UserFileOverridesSomeKeys) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("suanli_tco_test_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "tco.toml");
    f << "[sources]\nq = \"our 2026 quote\"\n[defaults]\nelectricity_usd_per_kwh = { value = 0.25, source = \"q\" }\n";
  }
  CatalogOptions o;
  o.user_dirs.push_back(dir.string());
  auto a = LoadTcoAssumptions(o);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_DOUBLE_EQ(a->electricity_usd_per_kwh.value, 0.25);
  EXPECT_NE(a->electricity_usd_per_kwh.source.find("our 2026 quote"), std::string::npos);
  EXPECT_DOUBLE_EQ(a->pue.value, 1.58);  // untouched
  {
    std::ofstream f(dir / "tco.toml");
    f << "[sources]\nq = \"x\"\n[defaults]\npeu = { value = 1.2, source = \"q\" }\n";
  }
  auto bad = LoadTcoAssumptions(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("did you mean 'pue'"), std::string::npos) << bad.status().message();
  fs::remove_all(dir);
}

// Each GPU's host class follows from its data file: an RTX 4090 sits in a desktop, not an 8-GPU HGX server.
TEST(TcoHosts, ClassFollowsFormFactorAndSegment) {
  EXPECT_EQ(HostClassFor(Gpu("h100-sxm")), "baseboard");
  EXPECT_EQ(HostClassFor(Gpu("mi300x")), "baseboard");
  EXPECT_EQ(HostClassFor(Gpu("l40s")), "pcie-server");
  EXPECT_EQ(HostClassFor(Gpu("h100-nvl")), "pcie-server");
  EXPECT_EQ(HostClassFor(Gpu("gb200")), "superchip");
  EXPECT_EQ(HostClassFor(Gpu("rtx-4090")), "workstation");
  EXPECT_EQ(HostClassFor(Gpu("rtx-6000-ada")), "workstation");
  EXPECT_EQ(HostClassFor(Gpu("rtx-4060-laptop")), "laptop");
  // Every class a catalog GPU maps to is in the bundled data, with a description.
  const TcoAssumptions a = Defaults();
  for (const char* c : {"baseboard", "pcie-server", "superchip", "workstation", "laptop"}) {
    ASSERT_TRUE(a.hosts.count(c)) << c;
    EXPECT_FALSE(a.hosts.at(c).description.empty()) << c;
  }
}

TEST(TcoHosts, ClassValuesReplaceTheDefaultsTheyName) {
  const TcoAssumptions a = Defaults();
  // The baseboard class is the defaults: an 8 x H100 server still draws about 10 kW (test above).
  const TcoInputs h100 = TcoInputsFor(Gpu("h100-sxm"), a);
  EXPECT_EQ(h100.host_class, "baseboard");
  EXPECT_DOUBLE_EQ(h100.server_share_usd, a.server_share_usd.value);
  EXPECT_DOUBLE_EQ(h100.pue, a.pue.value);
  // A desktop: its own non-GPU parts, no colocation, no data-centre cooling, no staff; the keys it does not set
  // (electricity, depreciation) are the defaults'.
  const TcoInputs desk = TcoInputsFor(Gpu("rtx-4090"), a);
  EXPECT_EQ(desk.host_class, "workstation");
  EXPECT_LT(desk.server_share_usd, h100.server_share_usd);
  EXPECT_DOUBLE_EQ(desk.network_share_usd, 0);
  EXPECT_DOUBLE_EQ(desk.hosting_usd_per_kw_month, 0);
  EXPECT_DOUBLE_EQ(desk.staff_usd_per_gpu_year, 0);
  EXPECT_DOUBLE_EQ(desk.pue, 1.0);
  EXPECT_DOUBLE_EQ(desk.electricity_usd_per_kwh, a.electricity_usd_per_kwh.value);
  EXPECT_DOUBLE_EQ(desk.depreciation_years, a.depreciation_years.value);
  EXPECT_NE(desk.provenance.at("server_share_usd").find("[hosts.workstation] server_share"), std::string::npos)
      << desk.provenance.at("server_share_usd");
  EXPECT_NE(desk.provenance.at("electricity_usd_per_kwh").find("[defaults]"), std::string::npos);
  // Owning the card costs far less than the baseboard class made it (GPU + 6250 + 3000 + 1000 USD of capex).
  auto r = ComputeTco(desk);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_DOUBLE_EQ(r->capex_usd, desk.gpu_purchase_usd + desk.server_share_usd);
  // GB200 NVL72: about 120 kW per rack of 72 GPUs at 1200 W each.
  const TcoInputs gb = TcoInputsFor(Gpu("gb200"), a);
  EXPECT_EQ(gb.host_class, "superchip");
  EXPECT_NEAR(72 * (gb.gpu_power_watts + gb.host_power_watts), 120000, 100);
}

TEST(TcoHosts, NamedClassAndUnknownName) {
  const TcoAssumptions a = Defaults();
  // A PCIe card in an HGX-priced server when the user says so.
  auto in = TcoInputsFor(Gpu("l40s"), a, "baseboard");
  ASSERT_TRUE(in.ok()) << in.status().ToString();
  EXPECT_DOUBLE_EQ(in->server_share_usd, a.server_share_usd.value);
  EXPECT_DOUBLE_EQ(in->host_power_watts, a.host_power_watts.value);
  auto bad = TcoInputsFor(Gpu("l40s"), a, "workstaton");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("did you mean 'workstation'"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("pcie-server"), std::string::npos) << bad.status().message();
}

// A user's [defaults] key is their answer for every host class; their [hosts.X] keys change one class.
TEST(TcoHosts, UserDefaultsWinOverBundledClassValues) {
  const TcoAssumptions base = Defaults();
  auto a = ParseTcoToml(
      "[sources]\nq = \"our quote\"\n[defaults]\nserver_share = { value = \"5000 USD\", source = \"q\" }\n"
      "[hosts.workstation]\nhost_power = { value = \"100 W\", source = \"q\" }\n",
      "user/tco.toml", &base);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  const TcoInputs desk = TcoInputsFor(Gpu("rtx-4090"), *a);
  EXPECT_DOUBLE_EQ(desk.server_share_usd, 5000);
  EXPECT_DOUBLE_EQ(desk.host_power_watts, 100);
  EXPECT_DOUBLE_EQ(desk.pue, 1.0);  // the bundled class value the user did not touch
  EXPECT_DOUBLE_EQ(TcoInputsFor(Gpu("l40s"), *a).server_share_usd, 5000);
  EXPECT_DOUBLE_EQ(TcoInputsFor(Gpu("l40s"), *a).host_power_watts, base.hosts.at("pcie-server").values.at("host_power").value);
  // Unknown keys in a class table and a class without a description are errors naming the file and table.
  auto typo = ParseTcoToml("[sources]\nq = \"x\"\n[hosts.workstation]\nhost_powr = { value = \"1 W\", source = \"q\" }\n",
                           "user/tco.toml", &base);
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("hosts.workstation.host_powr"), std::string::npos) << typo.status().message();
  auto nodesc = ParseTcoToml("[sources]\nq = \"x\"\n[hosts.rack]\npue = { value = 1.1, source = \"q\" }\n",
                             "user/tco.toml", &base);
  ASSERT_FALSE(nodesc.ok());
  EXPECT_NE(nodesc.status().message().find("[hosts.rack] needs a description"), std::string::npos)
      << nodesc.status().message();
  auto range = ParseTcoToml("[sources]\nq = \"x\"\n[hosts.workstation]\npue = { value = 0.5, source = \"q\" }\n",
                            "user/tco.toml", &base);
  ASSERT_FALSE(range.ok());
  EXPECT_NE(range.status().message().find("outside 1..5"), std::string::npos) << range.status().message();
}

}  // namespace
}  // namespace suanli
