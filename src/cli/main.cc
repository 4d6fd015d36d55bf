// suanli command-line entry point: a thin layer over the library.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "suanli/text.h"

namespace suanli::cli {

CatalogOptions Context::CatalogOpts() const {
  CatalogOptions o;
  if (!g_->no_user_catalog) o.user_dirs.push_back(DefaultUserDataDir());
  for (const auto& d : g_->catalog_dirs) o.user_dirs.push_back(d);
  return o;
}

Result<const HardwareCatalog*> Context::hardware() {
  if (!hw_) {
    auto c = HardwareCatalog::Load(CatalogOpts());
    if (!c.ok()) return c.status();
    hw_ = std::move(c).value();
  }
  return &*hw_;
}

Result<const ModelCatalog*> Context::models() {
  if (!models_) {
    auto c = ModelCatalog::Load(CatalogOpts());
    if (!c.ok()) return c.status();
    models_ = std::move(c).value();
  }
  return &*models_;
}

Result<Job> LoadJob(Context* ctx, const std::string& model, const std::string& gpu, int gpus_per_node,
                    const std::string& inter_node, int nics_per_node) {
  Job j;
  SUANLI_ASSIGN_OR_RETURN(const ModelCatalog* mc, ctx->models());
  SUANLI_ASSIGN_OR_RETURN(j.hw, ctx->hardware());
  SUANLI_ASSIGN_OR_RETURN(j.model, mc->Resolve(model));
  SUANLI_ASSIGN_OR_RETURN(j.gpu, j.hw->FindGpu(gpu));
  // No --inter-node: the fabric of the GPU's reference system (data/gpus [network] fabric), else ib-ndr.
  const std::string fabric = inter_node.empty() ? j.hw->DefaultFabric(*j.gpu) : inter_node;
  // No --gpus-per-node: the GPU's reference NVLink domain (72 for GB200 NVL72), else 8.
  const int per_node = gpus_per_node != 0 ? gpus_per_node : HardwareCatalog::DefaultGpusPerNode(*j.gpu);
  SUANLI_ASSIGN_OR_RETURN(j.cluster, MakeCluster(*j.hw, *j.gpu, per_node, fabric, nics_per_node));
  SUANLI_ASSIGN_OR_RETURN(j.eff, LoadEfficiency(j.gpu->id));
  return j;
}

const std::vector<Command>& Commands() {
  static const std::vector<Command> cmds = {
      {"gpus", "List the GPU catalog, or show one GPU with the source of every value", SetupGpus},
      {"models", "List the bundled models, or show one (or a config.json) with exact parameter counts", SetupModels},
      {"fit", "Memory per GPU for inference, training or fine-tuning, and whether it fits", SetupFit},
      {"perf", "Training step time, MFU and time to train; inference TTFT, TPOT and throughput", SetupPerf},
      {"validate", "Run the performance model against every published measurement it keeps", SetupValidate},
      {"plan", "Search parallel layouts for a training job; emit Megatron/torchrun/DeepSpeed/Slurm/Kubernetes", SetupPlan},
      {"select", "Rank every GPU for a serving target or a training job: fit, speed, cost", SetupSelect},
      {"doctor", "Diagnose GPU machines from environment, kernel log, telemetry and app logs (live or offline)", SetupDoctor},
      {"bench", "Baseline micro-benchmarks with correctness checks, history and drift (compare)", SetupBench},
      {"mig", "Split GPUs between inference services with MIG: profiles, placements, nvidia-smi, mig-parted", SetupMig},
      {"tco", "Buy versus rent: total cost of ownership, cost per PFLOP-day and per million tokens, break-even", SetupTco},
  };
  return cmds;
}

const CLI::Validator& NodeCount() {
  static const CLI::Validator v = CLI::Range(1, 1024);
  return v;
}
// The whole of `text` as a number, or nullopt.
static std::optional<double> WholeNumber(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}
const CLI::Validator& BucketMb() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        const auto n = WholeNumber(text);
        if (!n) return "must be a number of MB, got '" + text + "'";
        const double mb = *n;
        if (!(mb > 0 && mb <= kMaxDpBucketMb))
          return "must be above 0 and at most 1e6 MB, got " + text + " (omit it for Megatron-Core's buckets)";
        return "";
      },
      "MB in (0, 1e6]", "BUCKETMB");
  return v;
}
const CLI::Validator& Positive() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        const auto n = WholeNumber(text);
        if (!n) return "must be a number above 0, got '" + text + "'";
        return *n > 0 ? std::string() : "must be above 0 (leave it out for none), got " + text;
      },
      "POSITIVE", "POSITIVE");
  return v;
}
const CLI::Validator& NotZero() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string {
        const auto n = WholeNumber(text);  // "00" and "0.0" are 0 too; what is not a number, CLI11 refuses itself
        return n && *n == 0 ? text + " is not a count here: give at least 1, or leave the option out for none"
                            : std::string();
      },
      "", "NOTZERO");
  return v;
}
const CLI::Validator& Count() {
  static const CLI::Validator v = CLI::Range(1, 1 << 20);
  return v;
}
const CLI::Validator& ServingMaxBatch() {
  static const CLI::Validator v = CLI::Range(int64_t{1}, int64_t{1} << 24);
  return v;
}
const CLI::Validator& NonEmpty() {
  static const CLI::Validator v(
      [](std::string& text) -> std::string { return text.empty() ? "must not be empty (omit it for the default)" : ""; },
      "", "NONEMPTY");
  return v;
}

namespace {

std::vector<std::string> CommandNames() {
  std::vector<std::string> n;
  for (const auto& c : Commands()) n.push_back(c.name);
  n.push_back("help");
  return n;
}

int PrintVersion(bool json) {
  if (json) {
    auto j = JsonEnvelope("suanli.version/1");
    j["version"] = SUANLI_VERSION;
#if defined(SUANLI_HAVE_CUDA) && SUANLI_HAVE_CUDA
    constexpr bool kCuda = true;  // the CUDA bench plugin was built (src/bench/module.cmake)
#else
    constexpr bool kCuda = false;
#endif
    j["features"] = {{"cuda", kCuda}, {"nvml_runtime_loading", true}};
    PrintJson(j);
  } else {
    std::printf("suanli %s\n", SUANLI_VERSION);
  }
  return kExitOk;
}

// Every floating-point option of every command refuses nan and inf, which would parse as doubles and then pass
// range checks written as `x < lo` (all comparisons with NaN are false) and give silently wrong answers.
void RequireFiniteNumbers(CLI::App* app) {
  static const CLI::Validator finite(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end != text.c_str() && *end == '\0' && !std::isfinite(v)) return "must be a finite number, got " + text;
        return "";
      },
      "", "FINITE");
  for (CLI::Option* o : app->get_options())
    if (o->get_type_name() == "FLOAT") o->check(finite);
  for (CLI::App* sub : app->get_subcommands([](CLI::App*) { return true; })) RequireFiniteNumbers(sub);
}

// The innermost subcommand being parsed (`perf train`, not `perf`), and its path from the top.
const CLI::App* InnermostCommand(const CLI::App& app, std::string* path) {
  const CLI::App* target = &app;
  while (!target->get_subcommands().empty()) {
    target = target->get_subcommands().back();
    *path += (path->empty() ? "" : " ") + target->get_name();
  }
  return target;
}

// The option names a subcommand accepts, its own and those it inherits from its parents (global flags such
// as --json fall through), for "did you mean".
std::vector<std::string> OptionNames(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app != nullptr; app = app->get_parent()) {
    for (const CLI::Option* o : app->get_options()) {
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    }
  }
  return names;
}

}  // namespace

int Main(int argc, char** argv) {
  GlobalOptions g;
  Context ctx(&g);
  CLI::App app{"suanli (算力): will it fit, how fast, on what, and why is it slow — numbers you can defend.\n"
               "Run `suanli help COMMAND` or `suanli COMMAND --help` for details.",
               "suanli"};
  app.require_subcommand(0, 1);
  app.fallthrough();
  bool version = false;
  app.add_flag("--version", version, "Print the version (with --json: build features too)");
  app.add_flag("--json", g.json, "Machine-readable JSON on stdout (versioned schema)");
  app.add_option("--catalog", g.catalog_dirs, "Extra data directory (gpus/*.toml, models/catalog.toml); repeatable")
      ->check(CLI::ExistingDirectory);
  app.add_flag("--no-user-catalog", g.no_user_catalog,
               "Ignore the default user data directory ($SUANLI_HOME or ~/.config/suanli)");

  std::vector<std::pair<CLI::App*, Action>> actions;
  for (const auto& c : Commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.summary);
    actions.emplace_back(sub, c.setup(sub, &ctx));
  }
  RequireFiniteNumbers(&app);
  CLI::App* help = app.add_subcommand("help", "Show help for suanli or for one command");
  std::string help_topic;
  help->add_option("command", help_topic, "Command to describe");

  // Unknown command: say what exists before CLI11 reports a positional it does not expect.
  if (argc >= 2 && argv[1][0] != '-') {
    const std::string cmd = argv[1];
    auto names = CommandNames();
    if (std::find(names.begin(), names.end(), cmd) == names.end()) {
      std::fprintf(stderr, "suanli: error: unknown command '%s'%s\nRun `suanli help` for the list of commands.\n",
                   cmd.c_str(), DidYouMean(cmd, names).c_str());
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ExtrasError& e) {
    // Suggest the flags of the command being parsed.
    std::string path;
    const CLI::App* target = InnermostCommand(app, &path);
    std::string msg = e.what();
    std::string hint;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a.rfind("--", 0) == 0) {
        std::string name = a.substr(0, a.find('='));
        auto names = OptionNames(target);
        if (std::find(names.begin(), names.end(), name) == names.end()) {
          hint = fmt::format("unknown option '{}' for `suanli {}`{}", name, path, DidYouMean(name, names));
          break;
        }
      }
    }
    std::fprintf(stderr, "suanli: error: %s\nRun `suanli %s --help` for the options.\n",
                 hint.empty() ? msg.c_str() : hint.c_str(), path.c_str());
    return kExitUsage;
  } catch (const CLI::RequiredError& e) {
    // A command that needs a subcommand (`suanli perf`): name the ones it has, not just CLI11's sentence.
    std::string path;
    const CLI::App* target = InnermostCommand(app, &path);
    std::vector<std::string> subs;
    for (const CLI::App* s : target->get_subcommands([](const CLI::App*) { return true; })) subs.push_back(s->get_name());
    if (target != &app && !subs.empty() && std::string(e.what()).find("subcommand") != std::string::npos) {
      std::string list;
      for (const auto& n : subs) list += (list.empty() ? "" : " | ") + n;
      std::fprintf(stderr, "suanli: error: `suanli %s` needs a subcommand: %s\nRun `suanli %s --help` for details.\n",
                   path.c_str(), list.c_str(), path.c_str());
    } else {
      std::fprintf(stderr, "suanli: error: %s\n", e.what());
    }
    return kExitUsage;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "suanli: error: %s\n", e.what());
    return kExitUsage;
  }
  if (version) return PrintVersion(g.json);
  if (help->parsed()) {
    if (help_topic.empty()) {
      std::cout << app.get_formatter()->make_help(&app, "suanli", CLI::AppFormatMode::Normal);
      return kExitOk;
    }
    for (auto& [sub, _] : actions) {
      if (sub->get_name() == help_topic) {
        std::cout << sub->help();
        return kExitOk;
      }
    }
    std::fprintf(stderr, "suanli: error: no help for unknown command '%s'%s\n", help_topic.c_str(),
                 DidYouMean(help_topic, CommandNames()).c_str());
    return kExitUsage;
  }
  for (auto& [sub, action] : actions) {
    if (sub->parsed()) {
      try {
        return action();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "suanli: internal error: %s (please report this)\n", e.what());
        return kExitInternal;
      }
    }
  }
  std::cout << app.help();
  return kExitOk;
}

}  // namespace suanli::cli

int main(int argc, char** argv) { return suanli::cli::Main(argc, argv); }
