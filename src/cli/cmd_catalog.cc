// `suanli gpus` and `suanli models`: browse the catalogs.
#include <fmt/format.h>

#include <iostream>

#include "cli/cli.h"
#include "suanli/units.h"

namespace suanli::cli {

namespace {

using json = nlohmann::json;

template <typename T>
json SourcedJson(const Sourced<T>& s) {
  json j = {{"value", s.value}, {"source", s.source}};
  if (!s.note.empty()) j["note"] = s.note;
  return j;
}
template <typename T>
void PutOpt(json& j, const char* key, const std::optional<Sourced<T>>& s) {
  if (s) j[key] = SourcedJson(*s);
}

std::string Tflops(const GpuSpec& g, Precision p) {
  auto v = g.PeakFlops(p);
  if (!v) return "-";
  return *v < 10e12 ? fmt::format("{:.1f}", *v / 1e12) : fmt::format("{:.0f}", *v / 1e12);
}

json GpuJson(const GpuSpec& g) {
  json j;
  j["id"] = g.id;
  j["name"] = g.name;
  j["vendor"] = g.vendor;
  j["architecture"] = g.architecture;
  j["form_factor"] = g.form_factor;
  j["segment"] = g.segment;
  j["aliases"] = g.aliases;
  j["file"] = g.file;
  PutOpt(j, "launch_year", g.launch_year);
  PutOpt(j, "compute_capability", g.compute_capability);
  PutOpt(j, "sm_count", g.sm_count);
  PutOpt(j, "ecc", g.ecc);
  PutOpt(j, "mig_max_instances", g.mig_max_instances);
  PutOpt(j, "fp64_reduced", g.fp64_reduced);
  json peaks = json::object();
  for (const auto& [p, s] : g.dense_peak) {
    json e = SourcedJson(s);
    e.erase("value");
    e[p == Precision::kInt8 ? "ops_per_s" : "flops_per_s"] = s.value;
    peaks[PrecisionKey(p)] = e;
  }
  j["dense_peak"] = peaks;
  j["memory_bytes"] = SourcedJson(g.memory_bytes);
  PutOpt(j, "memory_type", g.memory_type);
  j["memory_bandwidth_bytes_per_s"] = SourcedJson(g.memory_bandwidth_bytes_per_s);
  PutOpt(j, "l2_bytes", g.l2_bytes);
  PutOpt(j, "link_kind", g.link_kind);
  PutOpt(j, "link_bandwidth_per_direction_bytes_per_s", g.link_bandwidth_per_direction_bytes_per_s);
  PutOpt(j, "link_peers", g.link_peers);
  PutOpt(j, "pcie_generation", g.pcie_generation);
  PutOpt(j, "pcie_lanes", g.pcie_lanes);
  PutOpt(j, "host_link_kind", g.host_link_kind);
  PutOpt(j, "host_link_bandwidth_per_direction_bytes_per_s", g.host_link_bandwidth_per_direction_bytes_per_s);
  PutOpt(j, "host_memory_per_gpu_bytes", g.host_memory_per_gpu_bytes);
  PutOpt(j, "reference_fabric", g.reference_fabric);
  PutOpt(j, "reference_nvlink_domain", g.reference_nvlink_domain);
  PutOpt(j, "reference_gpus_per_host", g.reference_gpus_per_host);
  PutOpt(j, "tdp_watts", g.tdp_watts);
  PutOpt(j, "price_purchase_usd", g.price_purchase_usd);
  PutOpt(j, "price_on_demand_usd_per_hour", g.price_on_demand_usd_per_hour);
  PutOpt(j, "price_spot_usd_per_hour", g.price_spot_usd_per_hour);
  PutOpt(j, "price_reserved_usd_per_hour", g.price_reserved_usd_per_hour);
  return j;
}

void ShowGpu(const GpuSpec& g) {
  std::cout << fmt::format("{} ({})\n", g.name, g.id);
  if (!g.aliases.empty()) {
    std::string a;
    for (const auto& s : g.aliases) a += (a.empty() ? "" : ", ") + s;
    std::cout << "aliases: " << a << "\n";
  }
  std::cout << "defined in: " << g.file << "\n\n";
  Table t({"field", "value", "source", "note"});
  auto row = [&](const std::string& k, const std::string& v, const std::string& src, const std::string& note) {
    t.Row({k, v, src, note});
  };
  row("vendor / architecture", g.vendor + " / " + g.architecture, "", "");
  if (g.launch_year) row("launch year", std::to_string(g.launch_year->value), g.launch_year->source, g.launch_year->note);
  if (g.compute_capability)
    row("compute capability", g.compute_capability->value, g.compute_capability->source, g.compute_capability->note);
  if (g.sm_count) row("SMs / CUs", std::to_string(g.sm_count->value), g.sm_count->source, g.sm_count->note);
  for (const auto& [p, s] : g.dense_peak) {
    row(fmt::format("dense {}", PrecisionKey(p)),
        fmt::format("{:.1f} {}", s.value / 1e12, p == Precision::kInt8 ? "TOPS" : "TFLOP/s"), s.source, s.note);
  }
  row("memory", fmt::format("{} ({})", FormatBytes(g.memory_bytes.value), FormatGiB(g.memory_bytes.value)),
      g.memory_bytes.source, g.memory_bytes.note);
  if (g.memory_type) row("memory type", g.memory_type->value, g.memory_type->source, g.memory_type->note);
  row("memory bandwidth", FormatBandwidth(g.memory_bandwidth_bytes_per_s.value), g.memory_bandwidth_bytes_per_s.source,
      g.memory_bandwidth_bytes_per_s.note);
  if (auto bf = g.PeakFlops(Precision::kBf16).value_or(g.PeakFlops(Precision::kFp16).value_or(0)); bf > 0) {
    row("ridge point (16-bit)", fmt::format("{:.0f} FLOP/byte", bf / g.memory_bandwidth_bytes_per_s.value),
        "computed: dense 16-bit peak / memory bandwidth", "");
  }
  if (g.l2_bytes) row("L2 cache", FormatBytes(g.l2_bytes->value), g.l2_bytes->source, g.l2_bytes->note);
  if (g.link_kind)
    row("GPU link", fmt::format("{} {} per direction", g.link_kind->value,
                                FormatBandwidth(g.link_bandwidth_per_direction_bytes_per_s->value)),
        g.link_bandwidth_per_direction_bytes_per_s->source, g.link_bandwidth_per_direction_bytes_per_s->note);
  else
    row("GPU link", "none (PCIe only)", "", "");
  if (g.pcie_generation)
    row("PCIe", fmt::format("Gen{} x{}", g.pcie_generation->value, g.pcie_lanes ? g.pcie_lanes->value : 16),
        g.pcie_generation->source, g.pcie_generation->note);
  if (g.host_link_bandwidth_per_direction_bytes_per_s)
    row("Host link", fmt::format("{} {} per direction", g.host_link_kind ? g.host_link_kind->value : "host link",
                                 FormatBandwidth(g.host_link_bandwidth_per_direction_bytes_per_s->value)),
        g.host_link_bandwidth_per_direction_bytes_per_s->source, g.host_link_bandwidth_per_direction_bytes_per_s->note);
  if (g.host_memory_per_gpu_bytes)
    row("Host memory per GPU", FormatBytes(g.host_memory_per_gpu_bytes->value), g.host_memory_per_gpu_bytes->source,
        g.host_memory_per_gpu_bytes->note);
  if (g.reference_fabric)
    row("fabric between nodes", g.reference_fabric->value + " (the default of --inter-node)", g.reference_fabric->source,
        g.reference_fabric->note);
  if (g.reference_nvlink_domain)
    row("NVLink domain", fmt::format("{} GPUs (the default of --gpus-per-node)", g.reference_nvlink_domain->value),
        g.reference_nvlink_domain->source, g.reference_nvlink_domain->note);
  if (g.reference_gpus_per_host)
    row("GPUs per host", std::to_string(g.reference_gpus_per_host->value), g.reference_gpus_per_host->source,
        g.reference_gpus_per_host->note);
  if (g.tdp_watts) row("TDP", fmt::format("{:.0f} W", g.tdp_watts->value), g.tdp_watts->source, g.tdp_watts->note);
  if (g.ecc) row("ECC", g.ecc->value ? "yes" : "no", g.ecc->source, g.ecc->note);
  if (g.mig_max_instances)
    row("MIG instances", g.mig_max_instances->value ? std::to_string(g.mig_max_instances->value) : "no MIG",
        g.mig_max_instances->source, g.mig_max_instances->note);
  if (g.fp64_reduced && g.fp64_reduced->value) row("FP64", "reduced rate (not for FP64 science)", g.fp64_reduced->source, "");
  if (g.price_purchase_usd)
    row("price (indicative)", fmt::format("${:.0f}", g.price_purchase_usd->value), g.price_purchase_usd->source,
        g.price_purchase_usd->note);
  if (g.price_on_demand_usd_per_hour)
    row("cloud on-demand (indicative)", fmt::format("${:.2f}/GPU-hour", g.price_on_demand_usd_per_hour->value),
        g.price_on_demand_usd_per_hour->source, g.price_on_demand_usd_per_hour->note);
  std::cout << t.Render();
}

}  // namespace

Action SetupGpus(CLI::App* sub, Context* ctx) {
  auto id = std::make_shared<std::string>();
  auto links = std::make_shared<bool>(false);
  sub->add_option("id", *id, "GPU id or alias to show (omit to list)");
  auto* show = sub->add_subcommand("show", "Show one GPU");
  show->add_option("id", *id, "GPU id or alias")->required();
  sub->add_flag("--links", *links, "List interconnects (NVLink, PCIe, InfiniBand, RoCE, Ethernet) instead");
  return [ctx, id, links]() -> int {
    auto hw = ctx->hardware();
    if (!hw.ok()) return PrintError(hw.status());
    const bool json_out = ctx->options().json;
    if (*links) {
      if (json_out) {
        auto j = JsonEnvelope("suanli.interconnects/1");
        j["interconnects"] = json::array();
        for (const auto& l : (*hw)->interconnects()) {
          json e = {{"id", l.id}, {"name", l.name}, {"class", l.cls},
                    {"bandwidth_per_direction_bytes_per_s", SourcedJson(l.bandwidth_per_direction_bytes_per_s)}};
          if (l.latency_s) e["latency_s"] = SourcedJson(*l.latency_s);
          j["interconnects"].push_back(e);
        }
        PrintJson(j);
        return kExitOk;
      }
      Table t({"id", "name", "class", "per direction", "= Gb/s", "latency"});
      for (const auto& l : (*hw)->interconnects()) {
        const double b = l.bandwidth_per_direction_bytes_per_s.value;
        t.Row({l.id, l.name, l.cls, FormatBandwidth(b), fmt::format("{:.0f} Gb/s", b * 8 / 1e9),
               l.latency_s ? FormatSeconds(l.latency_s->value) : "-"});
      }
      std::cout << t.Render() << "GB/s = bytes, Gb/s = bits (x8). Sources: `suanli gpus --links --json`.\n";
      return kExitOk;
    }
    if (!id->empty()) {
      auto g = (*hw)->FindGpu(*id);
      if (!g.ok()) return PrintError(g.status());
      if (json_out) {
        auto j = JsonEnvelope("suanli.gpu/1");
        j["gpu"] = GpuJson(**g);
        PrintJson(j);
      } else {
        ShowGpu(**g);
      }
      return kExitOk;
    }
    if (json_out) {
      auto j = JsonEnvelope("suanli.gpus/1");
      j["gpus"] = json::array();
      for (const auto& g : (*hw)->gpus()) j["gpus"].push_back(GpuJson(g));
      PrintJson(j);
      return kExitOk;
    }
    Table t({"id", "name", "memory", "bandwidth", "bf16/fp16 TF", "fp8 TF", "fp64 TF", "link/dir", "TDP", "year"});
    for (const auto& g : (*hw)->gpus()) {
      std::string bf = Tflops(g, Precision::kBf16);
      if (bf == "-") bf = Tflops(g, Precision::kFp16);
      t.Row({g.id, g.name, FormatBytes(g.memory_bytes.value), FormatBandwidth(g.memory_bandwidth_bytes_per_s.value), bf,
             Tflops(g, Precision::kFp8), Tflops(g, Precision::kFp64),
             g.link_bandwidth_per_direction_bytes_per_s ? FormatBandwidth(g.link_bandwidth_per_direction_bytes_per_s->value) : "PCIe",
             g.tdp_watts ? fmt::format("{:.0f} W", g.tdp_watts->value) : "-",
             g.launch_year ? std::to_string(g.launch_year->value) : "-"});
    }
    std::cout << t.Render()
              << "Dense peaks (no 2:4 sparsity); GeForce 16-bit rates are FP32-accumulate. `suanli gpus ID` shows "
                 "every value with its source.\n";
    return kExitOk;
  };
}

namespace {
json ModelJson(const ModelSpec& m, const CatalogModel* cm) {
  const ParamCounts c = CountParams(m);
  json j;
  j["id"] = m.id;
  j["name"] = m.name;
  j["model_type"] = m.model_type;
  j["source"] = m.source;
  j["hidden"] = m.hidden;
  j["layers"] = m.layers;
  j["heads"] = m.heads;
  j["kv_heads"] = m.kv_heads;
  j["head_dim"] = m.head_dim;
  j["ffn"] = m.ffn;
  j["vocab"] = m.vocab;
  j["max_positions"] = m.max_positions;
  j["tie_embeddings"] = m.tie_embeddings;
  j["gated_mlp"] = m.gated_mlp;
  j["parallel_block"] = m.parallel_block;  // attention and MLP off the same input: one TP all-reduce per layer
  const char* attn[] = {"mha", "gqa", "mqa", "mla"};
  j["attention"] = attn[static_cast<int>(m.attention())];
  if (m.sliding_window)
    j["sliding_window"] = {
        {"tokens", m.sliding_window}, {"layers", m.sliding_window_layers}, {"chunked", m.chunked_window}};
  if (!m.stored_quantization.empty())
    j["stored_quantization"] = {
        {"weights", m.stored_weights.empty() ? nlohmann::json(nullptr) : nlohmann::json(m.stored_weights)},
        {"description", m.stored_quantization}};
  if (m.moe) {
    j["moe"] = {{"experts", m.moe->num_experts},         {"experts_per_token", m.moe->experts_per_token},
                {"expert_ffn", m.moe->expert_ffn},       {"shared_experts", m.moe->num_shared_experts},
                {"first_dense_layers", m.moe->first_dense_layers}, {"moe_layers", m.moe_layer_count()}};
  }
  j["params_total"] = c.total;
  j["params_active"] = c.active;
  j["params_breakdown"] = {{"embedding", c.embedding}, {"lm_head", c.lm_head},   {"attention", c.attention},
                           {"mlp_dense", c.mlp_dense}, {"moe_experts", c.moe_experts}, {"moe_shared", c.moe_shared},
                           {"router", c.router},       {"norms", c.norms}};
  j["kv_cache_bytes_per_token_bf16"] = KvBytesPerToken(m, 2.0);
  if (cm) {
    j["aliases"] = cm->aliases;
    j["hf_repo"] = cm->hf_repo;
    if (cm->published_params) j["published_params"] = SourcedJson(*cm->published_params);
    if (cm->published_active_params) j["published_active_params"] = SourcedJson(*cm->published_active_params);
  }
  return j;
}

void ShowModel(const ModelSpec& m, const CatalogModel* cm) {
  const ParamCounts c = CountParams(m);
  const char* attn[] = {"MHA", "GQA", "MQA", "MLA"};
  std::cout << fmt::format("{} ({}, model_type {})\nsource: {}\n\n", m.name, m.id, m.model_type, m.source);
  Table t({"field", "value"});
  t.Row({"hidden / layers / heads", fmt::format("{} / {} / {}", m.hidden, m.layers, m.heads)});
  t.Row({"attention", fmt::format("{} ({} KV heads, head dim {})", attn[static_cast<int>(m.attention())], m.kv_heads,
                                  m.head_dim)});
  t.Row({"MLP", fmt::format("{} {}{}", m.gated_mlp ? "gated (3 matrices)" : "plain (2 matrices)", m.ffn,
                             m.parallel_block ? ", in parallel with attention (one TP all-reduce per layer)" : "")});
  if (m.moe)
    t.Row({"MoE", fmt::format("{} experts, top-{}, expert ffn {}, {} shared, {} MoE layers", m.moe->num_experts,
                              m.moe->experts_per_token, m.moe->expert_ffn, m.moe->num_shared_experts,
                              m.moe_layer_count())});
  t.Row({"vocab / context", fmt::format("{} / {}", m.vocab, m.max_positions)});
  if (m.sliding_window)
    t.Row({m.chunked_window ? "attention chunks" : "sliding window",
           fmt::format("{} tokens on {} of {} layers", m.sliding_window, m.sliding_window_layers, m.layers)});
  if (!m.stored_quantization.empty())
    t.Row({"checkpoint stored as", m.stored_weights.empty()
                                       ? fmt::format("{} (not a format suanli models)", m.stored_quantization)
                                       : fmt::format("{} ({}; --weights {})", m.stored_weights, m.stored_quantization,
                                                     m.stored_weights)});
  t.Row({"parameters (total)", fmt::format("{} ({:.0f})", FormatCount(c.total), c.total)});
  if (m.moe) t.Row({"parameters (active/token)", fmt::format("{} ({:.0f})", FormatCount(c.active), c.active)});
  t.Row({"  embedding + head", FormatCount(c.embedding + c.lm_head)});
  t.Row({"  attention", FormatCount(c.attention)});
  t.Row({"  MLP / experts", FormatCount(c.mlp_dense + c.moe_experts + c.moe_shared + c.router)});
  t.Row({"KV cache per token (bf16)", FormatBytes(KvBytesPerToken(m, 2.0))});
  if (cm && cm->published_params) {
    // The published figure relative to the count computed from the config: (published - computed) / computed.
    const double e = (cm->published_params->value - c.total) / c.total * 100;
    t.Row({"published total", fmt::format("{} ({:+.2f}% vs computed) — {}", FormatCount(cm->published_params->value), e,
                                          cm->published_params->source)});
  }
  if (cm && cm->published_active_params) {
    t.Row({"published active", fmt::format("{} — {}", FormatCount(cm->published_active_params->value),
                                           cm->published_active_params->source)});
  }
  if (m.mtp_layers) t.Row({"not counted", fmt::format("{} multi-token-prediction module(s)", m.mtp_layers)});
  std::cout << t.Render();
}
}  // namespace

Action SetupModels(CLI::App* sub, Context* ctx) {
  auto id = std::make_shared<std::string>();
  sub->add_option("id", *id, "Model id, alias, or path to a Hugging Face config.json (omit to list)");
  auto* show = sub->add_subcommand("show", "Show one model");
  show->add_option("id", *id, "Model id, alias or config.json path")->required();
  return [ctx, id]() -> int {
    auto mc = ctx->models();
    if (!mc.ok()) return PrintError(mc.status());
    const bool json_out = ctx->options().json;
    if (!id->empty()) {
      auto m = (*mc)->Resolve(*id);
      if (!m.ok()) return PrintError(m.status());
      auto found = (*mc)->Find(m->id);
      const CatalogModel* cm = found.ok() ? *found : nullptr;
      if (json_out) {
        auto j = JsonEnvelope("suanli.model/1");
        j["model"] = ModelJson(*m, cm);
        PrintJson(j);
      } else {
        ShowModel(*m, cm);
      }
      return kExitOk;
    }
    if (json_out) {
      auto j = JsonEnvelope("suanli.models/1");
      j["models"] = json::array();
      for (const auto& cm : (*mc)->models()) j["models"].push_back(ModelJson(cm.spec, &cm));
      PrintJson(j);
      return kExitOk;
    }
    Table t({"id", "type", "params", "active", "layers", "hidden", "heads/kv", "context", "published"});
    for (const auto& cm : (*mc)->models()) {
      const auto c = CountParams(cm.spec);
      t.Row({cm.spec.id, cm.spec.model_type, FormatCount(c.total), cm.spec.moe ? FormatCount(c.active) : "",
             std::to_string(cm.spec.layers), std::to_string(cm.spec.hidden),
             fmt::format("{}/{}", cm.spec.heads, cm.spec.kv_heads), std::to_string(cm.spec.max_positions),
             cm.published_params ? FormatCount(cm.published_params->value) : "-"});
    }
    std::cout << t.Render() << "Parameters are computed from each config, tensor by tensor; `suanli models ID` "
                               "compares with the published count.\n";
    return kExitOk;
  };
}

}  // namespace suanli::cli
