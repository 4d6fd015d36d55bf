// NCCL's measured times inside one NVLink domain (data/nccl_curves.toml; docs/methodology.md §7).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/data_registry.h"
#include "core/toml_reader.h"
#include "suanli/perf.h"

namespace suanli {

namespace {

constexpr const char* kOpKeys[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
constexpr int kRanks[] = {2, 4, 8};

// The bus bandwidth factor nccl-tests applies: busbw = algbw x factor.
double BusFactor(CurveOp op, int n) { return op == CurveOp::kAllReduce ? 2.0 * (n - 1) / n : double(n - 1) / n; }

// Measured time (s) at `bytes` over one of the measured rank counts, interpolated linearly between the two sizes
// around it, flat below the smallest size, and along the line through the two largest sizes beyond the largest.
double TimeAt(const std::vector<double>& sizes, const std::vector<double>& t, double bytes) {
  if (bytes <= sizes.front()) return t.front();
  size_t i = 1;
  while (i + 1 < sizes.size() && bytes > sizes[i]) ++i;
  const double f = (bytes - sizes[i - 1]) / (sizes[i] - sizes[i - 1]);
  return t[i - 1] + f * (t[i] - t[i - 1]);  // f > 1 past the largest size: the same line, extended
}

}  // namespace

Result<std::vector<NcclCurve>> ParseNcclCurves(std::string_view text, std::string_view file_sv) {
  const std::string file(file_sv);
  SUANLI_ASSIGN_OR_RETURN(toml::table doc, detail::ParseTomlText(text, file));
  detail::TableReader root(doc, file, "");
  SUANLI_ASSIGN_OR_RETURN(const auto sources, detail::ReadSources(root, file));
  std::vector<double> sizes;
  const toml::array* sa = root.Array("sizes");
  if (!sa || sa->size() < 2) return ParseError(file + ": 'sizes' must list at least two message sizes in bytes");
  for (const auto& v : *sa) {
    const auto x = v.value<double>();
    if (!x || !(*x > 0) || !std::isfinite(*x) || (!sizes.empty() && *x <= sizes.back()))
      return ParseError(file + ": 'sizes' must be positive byte counts in increasing order");
    sizes.push_back(*x);
  }
  std::vector<NcclCurve> out;
  const toml::array* curves = root.Array("curve");
  if (!curves || curves->empty()) return ParseError(file + ": no [[curve]]");
  for (size_t ci = 0; ci < curves->size(); ++ci) {
    const toml::table* ct = (*curves)[ci].as_table();
    if (!ct) return ParseError(fmt::format("{}: curve[{}] must be a table", file, ci));
    detail::TableReader r(*ct, file, fmt::format("curve[{}]", ci), &sources);
    NcclCurve c;
    c.sizes = sizes;
    SUANLI_ASSIGN_OR_RETURN(c.link, r.String("link"));
    SUANLI_ASSIGN_OR_RETURN(c.also, r.StringList("also"));
    SUANLI_ASSIGN_OR_RETURN(c.gpu, r.String("gpu"));
    SUANLI_ASSIGN_OR_RETURN(std::string source, r.String("source"));
    auto it = sources.find(source);
    if (it == sources.end()) return ParseError(fmt::format("{}: source '{}' is not in [sources]", r.Where("source"), source));
    c.source = it->second;
    SUANLI_ASSIGN_OR_RETURN(std::string ref, r.String("reference_busbw"));
    SUANLI_ASSIGN_OR_RETURN(c.reference_busbw, ParseQuantity(ref, Dimension::kBytesPerSecond));
    if (!(c.reference_busbw > 0)) return ParseError(fmt::format("{}: must be positive", r.Where("reference_busbw")));
    SUANLI_ASSIGN_OR_RETURN(std::string nref, r.String("reference_nvls_busbw"));
    SUANLI_ASSIGN_OR_RETURN(c.reference_nvls_busbw, ParseQuantity(nref, Dimension::kBytesPerSecond));
    if (!(c.reference_nvls_busbw >= c.reference_busbw))
      return ParseError(fmt::format("{}: must be at least reference_busbw (the in-switch all-reduce is the faster)",
                                    r.Where("reference_nvls_busbw")));
    for (int op = 0; op < 4; ++op) {
      const toml::table* ot = r.SubTable(kOpKeys[op]);
      if (!ot) return ParseError(fmt::format("{}: missing [curve.{}]", r.Where(kOpKeys[op]), kOpKeys[op]));
      detail::TableReader orr(*ot, file, fmt::format("curve[{}].{}", ci, kOpKeys[op]));
      for (int k = 0; k < 3; ++k) {
        const std::string key = fmt::format("n{}", kRanks[k]);
        const toml::array* ta = orr.Array(key);
        if (!ta || ta->size() != sizes.size())
          return ParseError(fmt::format("{}: needs {} times in microseconds, one per size", orr.Where(key), sizes.size()));
        std::vector<double>& t = c.time_s[op][k];
        for (const auto& v : *ta) {
          const auto x = v.value<double>();
          if (!x || !(*x > 0) || !std::isfinite(*x))
            return ParseError(fmt::format("{}: every time must be a positive number of microseconds", orr.Where(key)));
          t.push_back(*x * 1e-6);
        }
        // A time above a larger message's is measurement noise (a spike of the small, latency-bound sizes): lowered
        // to the smallest time of any larger size, so no size costs less than a smaller one.
        for (size_t i = t.size() - 1; i-- > 0;) t[i] = std::min(t[i], t[i + 1]);
      }
      SUANLI_RETURN_IF_ERROR(orr.CheckNoUnknownKeys());
    }
    SUANLI_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
    out.push_back(std::move(c));
  }
  SUANLI_RETURN_IF_ERROR(root.CheckNoUnknownKeys());
  return out;
}

const Result<std::vector<NcclCurve>>& BundledNcclCurves() {
  static const Result<std::vector<NcclCurve>> curves = []() -> Result<std::vector<NcclCurve>> {
    const auto* f = detail::FindEmbeddedFile("data/nccl_curves.toml");
    if (!f) return Internal("data/nccl_curves.toml is not embedded");
    return ParseNcclCurves(f->content, "embedded:data/nccl_curves.toml");
  }();
  return curves;
}

const NcclCurve* NcclCurveFor(std::string_view link_kind) {
  const auto& bundled = BundledNcclCurves();
  if (!bundled.ok()) return nullptr;
  const auto& all = *bundled;
  for (const auto& c : all)
    if (c.link == link_kind) return &c;
  for (const auto& c : all)
    if (std::find(c.also.begin(), c.also.end(), link_kind) != c.also.end()) return &c;
  return nullptr;
}

double NcclCurveRel(const NcclCurve& c, CurveOp op, double bytes, int n, bool ring) {
  const int o = static_cast<int>(op);
  const auto rel_at = [&](int k) {
    const int ranks = kRanks[k];
    const double moved = bytes * BusFactor(op, ranks);
    double t = TimeAt(c.sizes, c.time_s[o][k], bytes);
    // The 8-rank all-reduce ran in the switch (NVLS); as a ring it moves the same bytes at the ring's bus bandwidth:
    // the difference of the two asymptotic bandwidth terms added. At 2 and 4 ranks NCCL ran rings already (their
    // relative curves match A100's, which has no in-switch reduction).
    if (ring && op == CurveOp::kAllReduce && ranks == 8)
      t += moved * (1 / c.reference_busbw - 1 / c.reference_nvls_busbw);
    return moved / (t * c.reference_busbw);
  };
  if (n <= 2) return rel_at(0);
  if (n >= 8) return rel_at(2);
  const int k = n < 4 ? 0 : 1;
  const double f = double(n - kRanks[k]) / (kRanks[k + 1] - kRanks[k]);
  return rel_at(k) + f * (rel_at(k + 1) - rel_at(k));
}

double MeasuredCollectiveTime(const Cluster& c, const Efficiency& e, CurveOp op, double bytes, int n) {
  if (!c.nccl_curve || n < 2 || !(bytes > 0)) return -1;
  const double busbw = c.intra_bw_per_dir * e.link;
  if (!(busbw > 0)) return -1;
  const bool ring = !(c.nvls && e.link_allreduce > 0);
  const double rel = NcclCurveRel(*c.nccl_curve, op, bytes, n, ring);
  return bytes * BusFactor(op, n) / (busbw * rel);
}

}  // namespace suanli
