// `suanli mig`: split GPUs between inference services with MIG.
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "core/files.h"
#include "suanli/memory.h"
#include "suanli/mig.h"
#include "suanli/units.h"

namespace suanli::cli {

namespace {

using json = nlohmann::json;

struct MigFlags {
  std::string gpu = "h100-sxm";
  std::vector<std::string> services;
  std::string services_file;
  double reserve = 0.05;
  std::string config_name = "suanli";
  bool list = false;
};

// One sized service replica.
struct Sized {
  MigService svc;
  std::string label;      // name, or name#k for replicas
  double bytes = 0;
  MinGpus whole;          // when no MIG profile holds it
};

std::string Gib(double b) { return fmt::format("{:.2f}", b / kGiB); }

int ListProfiles(const MigGpu& g, bool json_out) {
  if (json_out) {
    json j = JsonEnvelope("suanli.mig-profiles/1");
    j["mig_table"] = g.id;
    j["name"] = g.name;
    j["gpus"] = g.gpus;
    j["memory_slices"] = g.memory_slices;
    j["compute_slices"] = g.compute_slices;
    j["max_instances"] = g.max_instances;
    j["note"] = g.note;
    json ps = json::array();
    for (const auto& p : g.profiles)
      ps.push_back({{"name", p.name}, {"id", p.id}, {"compute_slices", p.compute_slices},
                    {"memory_slices", p.memory_slices}, {"max_instances", p.max_instances},
                    {"placements", p.placements}, {"memory_bytes", p.memory_bytes.value},
                    {"memory_source", p.memory_bytes.source}, {"memory_note", p.memory_bytes.note},
                    {"kubernetes_resource", p.ResourceName()}});
    j["profiles"] = ps;
    PrintJson(j);
    return kExitOk;
  }
  std::cout << fmt::format("{} ({}): {} memory slices, {} compute slices, at most {} instances\n", g.name, g.id,
                           g.memory_slices, g.compute_slices, g.max_instances);
  if (!g.note.empty()) std::cout << "note: " << g.note << "\n";
  Table t({"profile", "ID", "compute", "memory slices", "memory GiB", "max", "placements", "memory source"});
  for (const auto& p : g.profiles) {
    std::string pl;
    for (int s : p.placements) pl += (pl.empty() ? "" : ",") + std::to_string(s);
    t.Row({p.name, std::to_string(p.id), std::to_string(p.compute_slices), std::to_string(p.memory_slices),
           Gib(p.memory_bytes.value), std::to_string(p.max_instances), "{" + pl + "}:" + std::to_string(p.memory_slices),
           p.memory_bytes.note.rfind("assumption", 0) == 0 ? "derived (assumption)" : "observed"});
  }
  std::cout << t.Render();
  return kExitOk;
}

}  // namespace

Action SetupMig(CLI::App* sub, Context* ctx) {
  auto f = std::make_shared<MigFlags>();
  sub->add_option("--gpu,-g", f->gpu,
                  "MIG-capable GPU: a100-sxm-40gb a100-sxm-80gb h100-sxm h100-pcie h100-nvl h200-sxm b200 gb200 ...")
      ->capture_default_str();
  sub->add_option("--service,-s", f->services,
                  "A service: model[:weights][:ctx=N][:users=N][:kv=fp8][:replicas=N][:compute=N][:name=X][:media], "
                  "e.g. llama-3.1-8b:int4:ctx=8192:users=4; repeatable");
  sub->add_option("--services", f->services_file, "TOML file of [[service]] tables (model, weights, context, users, ...)");
  sub->add_option("--reserve", f->reserve,
                  "Fraction of each instance's memory held back (usable = real memory x (1 - reserve))")
      ->capture_default_str();
  sub->add_option("--config-name", f->config_name, "Name of the mig-parted configuration")->capture_default_str();
  sub->add_flag("--list", f->list, "Show the GPU's MIG profiles, placements and real memory");

  return [ctx, f]() -> int {
    const bool json_out = ctx->options().json;
    CatalogOptions co;
    if (!ctx->options().no_user_catalog) co.user_dirs.push_back(DefaultUserDataDir());
    for (const auto& d : ctx->options().catalog_dirs) co.user_dirs.push_back(d);
    auto tables = LoadMigTables(co);
    if (!tables.ok()) return PrintError(tables.status());
    auto hw = ctx->hardware();
    if (!hw.ok()) return PrintError(hw.status());
    // Resolve aliases through the hardware catalog ("h100" -> h100-sxm), then find the MIG table.
    std::string gpu_id = f->gpu;
    const GpuSpec* spec = nullptr;
    if (auto g = (*hw)->FindGpu(f->gpu); g.ok()) {
      spec = *g;
      gpu_id = spec->id;
    }
    auto table = FindMigGpu(*tables, gpu_id);
    if (!table.ok()) {
      // Neither a catalog GPU nor a MIG table id: the catalog's did-you-mean is the useful message.
      if (!spec) return PrintError((*hw)->FindGpu(f->gpu).status());
      return PrintError(table.status());
    }
    const MigGpu& mg = **table;
    if (!spec) {
      auto g = (*hw)->FindGpu(mg.gpus.empty() ? mg.id : mg.gpus.front());
      if (!g.ok()) return PrintError(g.status());
      spec = *g;
    }
    if (f->list) return ListProfiles(mg, json_out);
    if (!(f->reserve >= 0 && f->reserve < 0.9))
      return PrintError(InvalidArgument(fmt::format("--reserve must be within 0..0.9, got {}", f->reserve)));

    std::vector<MigService> services;
    for (const auto& s : f->services) {
      auto p = ParseServiceSpec(s);
      if (!p.ok()) return PrintError(p.status());
      services.push_back(*p);
    }
    if (!f->services_file.empty()) {
      auto text = detail::ReadFile(f->services_file);
      if (!text.ok()) return PrintError(text.status());
      auto v = ParseServicesToml(*text, f->services_file);
      if (!v.ok()) return PrintError(v.status());
      services.insert(services.end(), v->begin(), v->end());
    }
    if (services.empty())
      return PrintError(InvalidArgument("give at least one --service (e.g. --service llama-3.1-8b:int4:ctx=8192:users=4) "
                                        "or --services FILE; --list shows the profiles"));
    auto mc = ctx->models();
    if (!mc.ok()) return PrintError(mc.status());

    // Size every replica with the memory model.
    std::vector<Sized> sized;
    std::vector<MigDemand> demands;
    std::map<std::string, int> name_count;
    for (const auto& s : services) {
      auto model = (*mc)->Resolve(s.model);
      if (!model.ok()) return PrintError(model.status().WithContext("service " + s.name));
      auto fit = SizeService(*model, s);
      if (!fit.ok()) return PrintError(fit.status().WithContext("service " + s.name));
      for (int r = 0; r < s.replicas; ++r) {
        Sized z;
        z.svc = s;
        int n = ++name_count[s.name];
        z.label = n == 1 ? s.name : fmt::format("{}#{}", s.name, n);
        z.bytes = fit->per_gpu_peak_bytes;
        demands.push_back(MigDemand{z.label, z.bytes, s.min_compute_slices, s.media});
        sized.push_back(std::move(z));
      }
    }
    MigOptions opt;
    opt.reserve = f->reserve;
    auto plan = PackMig(mg, demands, opt);
    if (!plan.ok()) return PrintError(plan.status());

    // Whole-GPU services: the TP degree from the memory model's minimum-GPU search.
    int whole_gpus = 0;
    for (std::size_t i = 0; i < sized.size(); ++i) {
      if (!plan->assignments[i].whole_gpu) continue;
      auto model = (*mc)->Resolve(sized[i].svc.model);
      FitRequest r;
      r.mode = Mode::kInfer;
      r.weights = *ParseWeightFormat(sized[i].svc.weights);
      r.kv_bytes_per_elem = *ParseKvDtype(sized[i].svc.kv_dtype);
      r.batch = sized[i].svc.users;
      r.seq = sized[i].svc.context;
      sized[i].whole = FindMinGpus(*model, r, *spec);
      if (sized[i].whole.gpus == 0)
        return PrintError(Status(ErrorCode::kDoesNotFit,
                                 fmt::format("service {} does not fit on any number of {}: {}", sized[i].label, spec->id,
                                             sized[i].whole.reason)));
      whole_gpus += sized[i].whole.gpus;
    }
    const int mig_gpus = static_cast<int>(plan->gpus.size());
    const std::string yaml = MigPartedYaml(mg, *plan, whole_gpus, f->config_name);
    std::vector<std::string> notes = {
        fmt::format("usable memory per instance = real instance memory x (1 - {:.2f}); memory per service from the "
                    "memory model (mode infer, batch = users, seq = context)", f->reserve),
        "MIG is a poor fit for training: an instance has 1/7 to 4/7 of the SMs and no NVLink/peer-to-peer between "
        "instances, so data- or tensor-parallel training across instances is slow or impossible; train on whole GPUs",
        "nvidia-smi creates instances in the order given; the intended placements are in the comment line, check them "
        "with `nvidia-smi mig -lgi`",
    };
    if (!mg.note.empty()) notes.push_back(mg.id + ": " + mg.note);
    const std::vector<MigUpgrade> upgrades = SpareComputeUpgrades(mg, *plan);
    for (const auto& u : upgrades) {
      const MigInstance& in = plan->gpus[u.gpu].instances[u.instance];
      notes.push_back(fmt::format("spare compute: {} on GPU {} could use {} (ID {}) instead of {} over the same memory "
                                  "slices, for more throughput", sized[in.service].label, u.gpu,
                                  mg.profiles[u.to_profile].name, mg.profiles[u.to_profile].id,
                                  mg.profiles[u.from_profile].name));
    }
    if (!plan->proven_minimal)
      notes.push_back(fmt::format("the packing uses {} MIG GPUs; the lower bound is {} and the search did not prove "
                                  "that fewer is impossible", mig_gpus, plan->lower_bound_gpus));

    if (json_out) {
      json j = JsonEnvelope("suanli.mig/1");
      j["gpu"] = spec->id;
      j["mig_table"] = mg.id;
      j["reserve_fraction"] = f->reserve;
      json sv = json::array();
      for (std::size_t i = 0; i < sized.size(); ++i) {
        const auto& z = sized[i];
        const auto& a = plan->assignments[i];
        json e = {{"name", z.label},          {"model", z.svc.model},   {"weights", z.svc.weights},
                  {"kv_dtype", z.svc.kv_dtype}, {"context_tokens", z.svc.context}, {"users", z.svc.users},
                  {"memory_bytes", z.bytes},  {"whole_gpu", a.whole_gpu}};
        if (a.whole_gpu) {
          e["gpus"] = z.whole.gpus;
          e["tp"] = z.whole.layout.tp;
          e["pp"] = z.whole.layout.pp;
          e["kubernetes_resource"] = "nvidia.com/gpu";
          e["kubernetes_count"] = z.whole.gpus;
        } else {
          const MigProfile& p = mg.profiles[a.profile];
          e["profile"] = p.name;
          e["profile_id"] = p.id;
          e["profile_memory_bytes"] = p.memory_bytes.value;
          e["usable_bytes"] = a.usable_bytes;
          e["headroom_bytes"] = a.usable_bytes - z.bytes;
          e["gpu_index"] = a.gpu;
          for (const auto& in : plan->gpus[a.gpu].instances)
            if (in.service == static_cast<int>(i)) e["start_slice"] = in.start;
          e["kubernetes_resource"] = p.ResourceName();
          e["kubernetes_count"] = 1;
        }
        sv.push_back(e);
      }
      j["services"] = sv;
      json gs = json::array();
      for (int gi = 0; gi < mig_gpus; ++gi) {
        json ins = json::array();
        int comp = 0, mem = 0;
        for (const auto& in : plan->gpus[gi].instances) {
          const MigProfile& p = mg.profiles[in.profile];
          comp += p.compute_slices;
          mem += p.memory_slices;
          ins.push_back({{"profile", p.name}, {"profile_id", p.id}, {"start_slice", in.start},
                         {"memory_slices", p.memory_slices}, {"compute_slices", p.compute_slices},
                         {"service", sized[in.service].label}});
        }
        gs.push_back({{"index", gi}, {"instances", ins}, {"compute_slices_used", comp}, {"memory_slices_used", mem},
                      {"nvidia_smi", NvidiaSmiCommands(mg, plan->gpus[gi], gi)}});
      }
      j["mig_gpus"] = gs;
      j["mig_gpu_count"] = mig_gpus;
      j["whole_gpu_count"] = whole_gpus;
      j["total_gpus"] = mig_gpus + whole_gpus;
      j["lower_bound_mig_gpus"] = plan->lower_bound_gpus;
      j["proven_minimal"] = plan->proven_minimal;
      json ups = json::array();
      for (const auto& u : upgrades)
        ups.push_back({{"service", sized[plan->gpus[u.gpu].instances[u.instance].service].label},
                       {"gpu_index", u.gpu},
                       {"from_profile", mg.profiles[u.from_profile].name},
                       {"to_profile", mg.profiles[u.to_profile].name},
                       {"to_profile_id", mg.profiles[u.to_profile].id}});
      j["spare_compute_upgrades"] = ups;
      j["mig_parted_yaml"] = yaml;
      j["notes"] = notes;
      PrintJson(j);
      return kExitOk;
    }

    std::cout << fmt::format("{} service{} on {} ({} MIG table), reserve {:.0f}% of each instance\n\n", sized.size(),
                             sized.size() == 1 ? "" : "s", spec->name, mg.id, 100 * f->reserve);
    Table t({"service", "model", "weights", "context", "users", "needs GiB", "profile", "usable GiB", "GPU", "request"});
    for (std::size_t i = 0; i < sized.size(); ++i) {
      const auto& z = sized[i];
      const auto& a = plan->assignments[i];
      if (a.whole_gpu) {
        t.Row({z.label, z.svc.model, z.svc.weights, std::to_string(z.svc.context), std::to_string(z.svc.users),
               Gib(z.bytes), fmt::format("{} whole GPU{} (TP={} PP={}), no MIG", z.whole.gpus, z.whole.gpus > 1 ? "s" : "",
                                         z.whole.layout.tp, z.whole.layout.pp),
               "-", "-", fmt::format("nvidia.com/gpu: {}", z.whole.gpus)});
      } else {
        const MigProfile& p = mg.profiles[a.profile];
        t.Row({z.label, z.svc.model, z.svc.weights, std::to_string(z.svc.context), std::to_string(z.svc.users),
               Gib(z.bytes), p.name, Gib(a.usable_bytes), std::to_string(a.gpu), p.ResourceName() + ": 1"});
      }
    }
    std::cout << t.Render() << "\n";
    std::cout << fmt::format("GPUs: {} with MIG + {} whole = {} (MIG lower bound {}{})\n\n", mig_gpus, whole_gpus,
                             mig_gpus + whole_gpus, plan->lower_bound_gpus,
                             plan->proven_minimal ? ", minimal" : ", not proven minimal");
    for (int gi = 0; gi < mig_gpus; ++gi) {
      std::string layout;
      for (const auto& in : plan->gpus[gi].instances)
      {
        const int n = mg.profiles[in.profile].memory_slices;
        const std::string slices =
            n == 1 ? fmt::format("slice {}", in.start) : fmt::format("slices {}-{}", in.start, in.start + n - 1);
        layout += fmt::format("  {:<11} {:<11} -> {}\n", slices, mg.profiles[in.profile].name, sized[in.service].label);
      }
      int comp = 0, mem = 0;
      for (const auto& in : plan->gpus[gi].instances) {
        comp += mg.profiles[in.profile].compute_slices;
        mem += mg.profiles[in.profile].memory_slices;
      }
      std::cout << fmt::format("GPU {} ({}/{} compute slices, {}/{} memory slices used):\n{}", gi, comp,
                               mg.compute_slices, mem, mg.memory_slices, layout);
    }
    if (mig_gpus > 0) {
      std::cout << "\n# nvidia-smi (run as root; MIG mode may need a GPU reset or reboot to take effect)\n";
      for (int gi = 0; gi < mig_gpus; ++gi) std::cout << NvidiaSmiCommands(mg, plan->gpus[gi], gi);
    } else {
      std::cout << "no service fits a MIG instance smaller than the whole GPU: no MIG needed\n";
    }
    std::cout << "\n# mig-parted configuration (nvidia-mig-parted apply -f FILE -c " << f->config_name << ")\n"
              << yaml << "\n";
    for (const auto& n : notes) std::cout << "note: " << n << "\n";
    return kExitOk;
  };
}

}  // namespace suanli::cli
