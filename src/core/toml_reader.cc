#include "core/toml_reader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "suanli/text.h"

namespace suanli::detail {

Result<toml::table> ParseTomlText(std::string_view text, std::string_view file) {
  try {
    return toml::parse(text, std::string(file));
  } catch (const toml::parse_error& e) {
    const auto& b = e.source().begin;
    return ParseError(fmt::format("{}:{}:{}: invalid TOML: {}", file, b.line, b.column, e.description()));
  }
}

TableReader::TableReader(const toml::table& table, std::string file, std::string path,
                         const std::map<std::string, std::string>* sources)
    : table_(table), file_(std::move(file)), path_(std::move(path)), sources_(sources) {}

std::string TableReader::Where(std::string_view key) const {
  return path_.empty() ? fmt::format("{}: key '{}'", file_, key) : fmt::format("{}: key '{}.{}'", file_, path_, key);
}

bool TableReader::Has(std::string_view key) const { return table_.contains(key); }

Result<std::optional<std::string>> TableReader::OptString(std::string_view key) {
  used_.emplace(key);
  const toml::node* n = table_.get(key);
  if (!n) return std::optional<std::string>();
  if (auto s = n->value<std::string>()) return std::optional<std::string>(*s);
  return ParseError(Where(key) + " must be a string");
}

Result<std::string> TableReader::String(std::string_view key) {
  SUANLI_ASSIGN_OR_RETURN(auto s, OptString(key));
  if (!s) return ParseError(Where(key) + " is required but missing");
  if (s->empty()) return ParseError(Where(key) + " must not be empty");
  return *s;
}

Result<std::vector<std::string>> TableReader::StringList(std::string_view key) {
  used_.emplace(key);
  std::vector<std::string> out;
  const toml::node* n = table_.get(key);
  if (!n) return out;
  const toml::array* a = n->as_array();
  if (!a) return ParseError(Where(key) + " must be an array of strings");
  for (const auto& e : *a) {
    auto s = e.value<std::string>();
    if (!s) return ParseError(Where(key) + " must be an array of strings");
    out.push_back(*s);
  }
  return out;
}

Result<std::optional<int64_t>> TableReader::OptInt(std::string_view key) {
  used_.emplace(key);
  const toml::node* n = table_.get(key);
  if (!n) return std::optional<int64_t>();
  if (n->is_integer()) return std::optional<int64_t>(n->as_integer()->get());
  return ParseError(Where(key) + " must be an integer");
}

Result<std::optional<double>> TableReader::OptNumber(std::string_view key) {
  used_.emplace(key);
  const toml::node* n = table_.get(key);
  if (!n) return std::optional<double>();
  if (n->is_integer()) return std::optional<double>(static_cast<double>(n->as_integer()->get()));
  if (n->is_floating_point()) return std::optional<double>(n->as_floating_point()->get());
  return ParseError(Where(key) + " must be a number");
}

Result<std::optional<bool>> TableReader::OptBool(std::string_view key) {
  used_.emplace(key);
  const toml::node* n = table_.get(key);
  if (!n) return std::optional<bool>();
  if (n->is_boolean()) return std::optional<bool>(n->as_boolean()->get());
  return ParseError(Where(key) + " must be true or false");
}

const toml::table* TableReader::SubTable(std::string_view key) {
  used_.emplace(key);
  const toml::node* n = table_.get(key);
  return n ? n->as_table() : nullptr;
}

const toml::array* TableReader::Array(std::string_view key) {
  used_.emplace(key);
  const toml::node* n = table_.get(key);
  return n ? n->as_array() : nullptr;
}

Result<const toml::table*> TableReader::SourcedEntry(std::string_view key, std::string* source, std::string* note,
                                                     std::vector<std::string_view> value_keys) {
  used_.emplace(key);
  const toml::node* n = table_.get(key);
  if (!n) return static_cast<const toml::table*>(nullptr);
  const toml::table* t = n->as_table();
  std::string shape;
  for (std::string_view v : value_keys) shape += fmt::format("{} = ..., ", v);
  if (!t) {
    return ParseError(Where(key) + " must be a table { " + shape + "source = \"...\" } so that it carries its source");
  }
  std::string valid;
  for (std::string_view v : value_keys) valid += fmt::format("{}, ", v);
  valid += "source, note, date";
  for (const auto& [k, v] : *t) {
    const bool known = k == "source" || k == "note" || k == "date" ||
                       std::find(value_keys.begin(), value_keys.end(), k.str()) != value_keys.end();
    if (!known) return ParseError(fmt::format("{}: unknown key '{}' (valid: {})", Where(key), k.str(), valid));
  }
  for (std::string_view v : value_keys)
    if (!t->contains(v)) return ParseError(fmt::format("{} has no '{}'", Where(key), v));
  auto src = (*t)["source"].value<std::string>();
  if (!src || src->empty()) return ParseError(Where(key) + " has no 'source': every value must cite where it came from");
  if (sources_ != nullptr) {
    auto it = sources_->find(*src);
    if (it == sources_->end()) {
      std::vector<std::string> ids;
      for (const auto& [id, _] : *sources_) ids.push_back(id);
      return ParseError(fmt::format("{}: source '{}' is not defined in [sources]{}", Where(key), *src,
                                    DidYouMean(*src, ids)));
    }
    *source = it->second;
  } else {
    *source = *src;
  }
  std::string n2 = (*t)["note"].value_or(std::string());
  if (auto d = (*t)["date"].value<std::string>()) n2 = n2.empty() ? ("as of " + *d) : (n2 + "; as of " + *d);
  *note = n2;
  return t;
}

Result<std::optional<Sourced<double>>> TableReader::OptQuantity(std::string_view key, Dimension dim) {
  Sourced<double> out;
  SUANLI_ASSIGN_OR_RETURN(const toml::table* t, SourcedEntry(key, &out.source, &out.note));
  if (!t) return std::optional<Sourced<double>>();
  auto s = (*t)["value"].value<std::string>();
  if (!s) {
    return ParseError(fmt::format("{}: value must be a string with a unit, e.g. \"80 GB\" ({} expected; units: {})",
                                  Where(key), DimensionName(dim), DimensionExampleUnits(dim)));
  }
  auto q = ParseQuantity(*s, dim);
  if (!q.ok()) return q.status().WithContext(Where(key));
  out.value = *q;
  return std::optional<Sourced<double>>(out);
}

Result<Sourced<double>> TableReader::Quantity(std::string_view key, Dimension dim) {
  SUANLI_ASSIGN_OR_RETURN(auto q, OptQuantity(key, dim));
  if (!q) return ParseError(Where(key) + " is required but missing");
  return *q;
}

Result<std::optional<Sourced<std::string>>> TableReader::OptSourcedString(std::string_view key) {
  Sourced<std::string> out;
  SUANLI_ASSIGN_OR_RETURN(const toml::table* t, SourcedEntry(key, &out.source, &out.note));
  if (!t) return std::optional<Sourced<std::string>>();
  auto s = (*t)["value"].value<std::string>();
  if (!s) return ParseError(Where(key) + ": value must be a string");
  out.value = *s;
  return std::optional<Sourced<std::string>>(out);
}

Result<std::optional<Sourced<int>>> TableReader::OptSourcedInt(std::string_view key) {
  Sourced<int> out;
  SUANLI_ASSIGN_OR_RETURN(const toml::table* t, SourcedEntry(key, &out.source, &out.note));
  if (!t) return std::optional<Sourced<int>>();
  const toml::node* v = t->get("value");
  if (!v->is_integer()) return ParseError(Where(key) + ": value must be an integer");
  int64_t x = v->as_integer()->get();
  if (x < 0 || x > 1000000) return ParseError(fmt::format("{}: value {} is out of range", Where(key), x));
  out.value = static_cast<int>(x);
  return std::optional<Sourced<int>>(out);
}

Result<std::optional<Sourced<double>>> TableReader::OptSourcedNumber(std::string_view key) {
  Sourced<double> out;
  SUANLI_ASSIGN_OR_RETURN(const toml::table* t, SourcedEntry(key, &out.source, &out.note));
  if (!t) return std::optional<Sourced<double>>();
  const toml::node* v = t->get("value");
  if (v->is_integer()) out.value = static_cast<double>(v->as_integer()->get());
  else if (v->is_floating_point()) out.value = v->as_floating_point()->get();
  else return ParseError(Where(key) + ": value must be a number");
  if (std::isnan(out.value)) return ParseError(Where(key) + ": value must be a number, not nan");
  if (!(out.value >= 0)) return ParseError(Where(key) + ": value must be non-negative");
  return std::optional<Sourced<double>>(out);
}

Result<std::optional<Sourced<bool>>> TableReader::OptSourcedBool(std::string_view key) {
  Sourced<bool> out;
  SUANLI_ASSIGN_OR_RETURN(const toml::table* t, SourcedEntry(key, &out.source, &out.note));
  if (!t) return std::optional<Sourced<bool>>();
  const toml::node* v = t->get("value");
  if (!v->is_boolean()) return ParseError(Where(key) + ": value must be true or false");
  out.value = v->as_boolean()->get();
  return std::optional<Sourced<bool>>(out);
}

Result<std::optional<Sourced<std::vector<std::pair<double, double>>>>> TableReader::OptSourcedCurve(
    std::string_view key, std::string_view x, std::string_view y) {
  using Curve = Sourced<std::vector<std::pair<double, double>>>;
  Curve out;
  SUANLI_ASSIGN_OR_RETURN(const toml::table* t, SourcedEntry(key, &out.source, &out.note, {x, y}));
  if (!t) return std::optional<Curve>();
  auto numbers = [&](std::string_view name) -> Result<std::vector<double>> {
    const toml::array* a = t->get(name)->as_array();
    if (!a) return ParseError(fmt::format("{}: '{}' must be an array of numbers", Where(key), name));
    std::vector<double> v;
    for (const auto& e : *a) {
      if (e.is_integer()) v.push_back(static_cast<double>(e.as_integer()->get()));
      else if (e.is_floating_point()) v.push_back(e.as_floating_point()->get());
      else return ParseError(fmt::format("{}: '{}' must be an array of numbers", Where(key), name));
      if (!(std::isfinite(v.back()) && v.back() > 0))
        return ParseError(fmt::format("{}: '{}' holds {}, and every entry must be a positive number", Where(key),
                                      name, v.back()));
    }
    return v;
  };
  SUANLI_ASSIGN_OR_RETURN(std::vector<double> xs, numbers(x));
  SUANLI_ASSIGN_OR_RETURN(std::vector<double> ys, numbers(y));
  if (xs.size() != ys.size())
    return ParseError(fmt::format("{}: '{}' has {} entries and '{}' {}; they pair up one to one", Where(key), x,
                                  xs.size(), y, ys.size()));
  if (xs.size() < 2) return ParseError(fmt::format("{}: a curve needs at least two points", Where(key)));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i > 0 && !(xs[i] > xs[i - 1]))
      return ParseError(fmt::format("{}: '{}' must increase strictly ({} follows {})", Where(key), x, xs[i], xs[i - 1]));
    out.value.emplace_back(xs[i], ys[i]);
  }
  return std::optional<Curve>(out);
}

Status TableReader::CheckNoUnknownKeys() const {
  std::vector<std::string> known(used_.begin(), used_.end());
  for (const auto& [k, v] : table_) {
    if (!used_.count(k.str())) {
      return ParseError(fmt::format("{}: unknown key{}", Where(k.str()), DidYouMean(k.str(), known)));
    }
  }
  return Status::Ok();
}

Result<std::map<std::string, std::string>> ReadSources(TableReader& root, const std::string& file) {
  std::map<std::string, std::string> sources;
  const toml::table* st = root.SubTable("sources");
  if (!st) return ParseError(file + ": missing [sources] table: every value must cite a source");
  for (const auto& [k, v] : *st) {
    auto s = v.value<std::string>();
    if (!s || s->empty()) return ParseError(fmt::format("{}: key 'sources.{}' must be a non-empty string", file, k.str()));
    sources.emplace(std::string(k.str()), *s);
  }
  return sources;
}

}  // namespace suanli::detail
