// `suanli validate`: the performance model against every published measurement we keep.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "cli/cli.h"
#include "core/files.h"
#include "suanli/text.h"
#include "suanli/validate.h"

namespace suanli::cli {

Action SetupValidate(CLI::App* sub, Context* ctx) {
  auto cases = std::make_shared<std::string>();
  auto group = std::make_shared<std::string>();
  sub->add_option("--cases", *cases, "A cases file (default: the bundled tests/validation/perf_cases.toml)");
  sub->add_option("--group", *group, "Only this group: training | decode | ttft | throughput | max_throughput | latency | speculative | gemm | attention | collective | moe | serving_attention | concurrency | disagg");
  auto efficiency = std::make_shared<std::string>();
  sub->add_option("--efficiency", *efficiency,
                  "An efficiency table in data/efficiency.toml's format instead of the bundled one (to scan a fitted "
                  "constant; scripts/fit_scan.py)");
  auto name = std::make_shared<std::string>();
  sub->add_option("--case", *name,
                  "Only the cases whose name contains this text (any case); the summary is theirs");
  auto command = std::make_shared<bool>(false);
  sub->add_flag("--command", *command,
                "For each training and serving case, the `suanli perf` command that runs the same estimate (add "
                "--explain to it to see why), instead of the table");
  return [ctx, cases, group, efficiency, name, command]() -> int {
    auto hw = ctx->hardware();
    if (!hw.ok()) return PrintError(hw.status());
    auto mc = ctx->models();
    if (!mc.ok()) return PrintError(mc.status());
    std::optional<EfficiencyTable> table;
    if (!efficiency->empty()) {
      auto text = detail::ReadFile(*efficiency, 16u << 20);
      if (!text.ok()) return PrintError(text.status());
      table = EfficiencyTable{*text, *efficiency};  // RunPerfValidation checks it for every GPU before any case
    }
    const EfficiencyTable* eff = table ? &*table : nullptr;
    Result<ValidationReport> rep = Internal("not run");
    if (cases->empty()) {
      rep = RunBundledPerfValidation(**hw, **mc, eff);
    } else {
      auto text = detail::ReadFile(*cases);
      if (!text.ok()) return PrintError(text.status());
      const std::filesystem::path base = std::filesystem::path(*cases).parent_path();
      auto read = [base](const std::string& rel) { return detail::ReadFile((base / rel).string(), 16u << 20); };
      rep = RunPerfValidation(*text, *cases, **hw, **mc, read, eff);
    }
    if (!rep.ok()) return PrintError(rep.status());
    // The commands run the estimate with the same efficiency table as the cases were.
    if (!efficiency->empty())
      for (auto& c : rep->cases)
        if (!c.command.empty()) c.command.insert(c.command.end(), {"--efficiency", *efficiency});
    // --group keeps that group's cases, summary row and verdict; a name no case has is an error, not an empty table.
    if (!group->empty()) {
      std::vector<std::string> names;
      for (const auto& g : rep->groups) names.push_back(g.group);
      if (std::find(names.begin(), names.end(), *group) == names.end())
        return PrintError(InvalidArgument(fmt::format("--group '{}': no case is in that group (groups: {}){}", *group,
                                                      fmt::join(names, ", "), DidYouMean(*group, names))));
      std::erase_if(rep->groups, [&](const ValidationGroup& g) { return g.group != *group; });
    }
    // --case keeps the cases whose name contains the text, case-insensitively, and summarises them alone.
    if (!name->empty()) {
      const std::string want = ToLower(*name);
      const size_t total = rep->cases.size();
      std::erase_if(rep->cases, [&](const ValidationCase& c) {
        return ToLower(c.name).find(want) == std::string::npos || (!group->empty() && c.group != *group);
      });
      if (rep->cases.empty())
        return PrintError(InvalidArgument(fmt::format(
            "--case '{}': no{} case's name contains it (of {}; `suanli validate` lists them)", *name,
            group->empty() ? "" : " " + *group, total)));
      rep->groups = SummarizeValidation(rep->cases);
    }
    bool all_ok = true;
    for (const auto& g : rep->groups) all_ok &= g.meets_target();
    // A case that cannot be evaluated is an input error (exit 2), not a missed target.
    int failed = 0;
    for (const auto& c : rep->cases)
      if (!c.failure.empty() && (group->empty() || c.group == *group)) ++failed;
    if (ctx->options().json) {
      nlohmann::json j = JsonEnvelope("suanli.validate/1");
      j["cases"] = nlohmann::json::array();
      for (const auto& c : rep->cases) {
        if (!group->empty() && c.group != *group) continue;
        nlohmann::json e = {{"group", c.group},         {"role", c.role},       {"name", c.name},
                            {"source", c.source},       {"metric", c.metric},   {"published", c.published},
                            {"predicted", c.predicted}, {"error", c.error},     {"detail", c.detail}, {"fits", c.fits},
                            {"gpu", c.gpu},             {"moe", c.moe}};
        if (!c.failure.empty()) e["failure"] = c.failure;
        if (c.step_time_s > 0) e["step_time_s"] = c.step_time_s;
        if (c.ttft_s > 0) {
          e["ttft_s"] = c.ttft_s;
          e["tpot_s"] = c.tpot_s;
        }
        if (*command && !c.command.empty()) e["command"] = c.command;
        if (c.bound > 0) {
          e["bound"] = c.bound;
          e["within_bound"] = c.within_bound();
        }
        j["cases"].push_back(e);
      }
      j["groups"] = nlohmann::json::array();
      for (const auto& g : rep->groups) {
        j["groups"].push_back({{"group", g.group},
                               {"cases", g.cases},
                               {"mean_abs_error", g.mean_abs_error},
                               {"worst_abs_error", g.worst_abs_error},
                               {"mean_abs_error_calibration", g.mean_abs_error_calibration},
                               {"mean_abs_error_holdout", g.mean_abs_error_holdout},
                               {"holdout_cases", g.holdout_cases},
                               {"beyond_bound", g.beyond_bound},
                               {"target_mean", g.target_mean},
                               {"target_worst", g.target_worst},
                               {"meets_target", g.meets_target()}});
      }
      PrintJson(j);
      if (failed > 0) return kExitInvalid;
      return all_ok ? kExitOk : kExitNoFit;
    }
    if (*command) {
      for (const auto& c : rep->cases) {
        if (!group->empty() && c.group != *group) continue;
        std::cout << fmt::format("# {} [{}, {}]: {} published {:.4g}", CommentText(c.name), CommentText(c.group),
                                 c.role, CommentText(c.metric), c.published);
        if (!c.failure.empty()) {
          std::cout << ", not evaluated: " << CommentText(c.failure) << "\n\n";
          continue;
        }
        std::cout << fmt::format(", predicted {:.4g} ({:+.1f}%)\n", c.predicted, 100 * c.error);
        if (c.command.empty()) {
          std::cout << "# a kernel micro-benchmark: no perf command runs it\n\n";
          continue;
        }
        std::cout << "suanli";
        for (const auto& arg : c.command) std::cout << " " << ShellQuote(arg);
        std::cout << "\n\n";
      }
      if (failed > 0) return kExitInvalid;
      return all_ok ? kExitOk : kExitNoFit;
    }
    Table t({"group", "role", "case", "metric", "published", "predicted", "error", "detail"});
    std::vector<const ValidationCase*> above;  // published beyond the physical bound
    for (const auto& c : rep->cases) {
      if (!group->empty() && c.group != *group) continue;
      if (c.failure.empty() && !c.within_bound()) above.push_back(&c);
      t.Row({c.group, c.role, c.name, c.metric, fmt::format("{:.4g}", c.published),
             c.failure.empty() ? fmt::format("{:.4g}", c.predicted) : "ERROR",
             c.failure.empty() ? fmt::format("{:+.1f}%", 100 * c.error) : "-",
             c.failure.empty() ? c.detail + (c.within_bound() ? "" : fmt::format(", BEYOND ITS BOUND {:.4g}", c.bound))
                               : c.failure});
    }
    std::cout << t.Render() << "\n";
    Table s({"group", "cases", "mean |error|", "worst |error|", "calibration mean", "holdout mean (n)", "target", "meets"});
    for (const auto& g : rep->groups) {
      s.Row({g.group, std::to_string(g.cases), fmt::format("{:.1f}%", 100 * g.mean_abs_error),
             fmt::format("{:.1f}%", 100 * g.worst_abs_error),
             g.cases > g.holdout_cases ? fmt::format("{:.1f}%", 100 * g.mean_abs_error_calibration) : "-",
             g.holdout_cases ? fmt::format("{:.1f}% ({})", 100 * g.mean_abs_error_holdout, g.holdout_cases) : "-",
             g.target_mean > 0 ? fmt::format("<= {:.0f}% / {:.0f}%", 100 * g.target_mean, 100 * g.target_worst) : "none",
             g.meets_target() ? "yes" : "NO"});
    }
    std::cout << s.Render();
    if (!above.empty()) {
      std::cout << fmt::format(
          "\nnote: {} published figure(s) beyond the physical bound, what the GPU's datasheet peak and bandwidth allow "
          "for the least work the case states (docs/methodology.md §8 and §9.5); check the source's batch, GPU and "
          "parallel layout:\n",
          above.size());
      for (const ValidationCase* c : above)
        std::cout << fmt::format("  {}: published {:.4g}, bound {:.4g} ({:+.0f}%)\n", c->name, c->published, c->bound,
                                 100 * (c->published / c->bound - 1));
    }
    if (failed > 0) {
      std::cerr << fmt::format("suanli: error: {} case(s) could not be evaluated (the ERROR rows say why); each counts "
                               "as a 100% error in its group\n",
                               failed);
      return kExitInvalid;
    }
    return all_ok ? kExitOk : kExitNoFit;
  };
}

}  // namespace suanli::cli
