// Strict reading of TOML tables: every key must be consumed, so a misspelled key in a
// data file is an error naming the file and the key (with "did you mean"), never ignored.
#pragma once

#include <toml++/toml.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "suanli/hardware.h"
#include "suanli/status.h"
#include "suanli/units.h"

namespace suanli::detail {

// Parses TOML text; parse errors name the file, line and column.
Result<toml::table> ParseTomlText(std::string_view text, std::string_view file);

class TableReader {
 public:
  // `path` is the dotted location used in errors ("" for the root), `sources` resolves source ids.
  TableReader(const toml::table& table, std::string file, std::string path,
              const std::map<std::string, std::string>* sources = nullptr);

  bool Has(std::string_view key) const;
  Result<std::string> String(std::string_view key);            // required
  Result<std::optional<std::string>> OptString(std::string_view key);
  Result<std::vector<std::string>> StringList(std::string_view key);  // optional; empty if absent
  Result<std::optional<int64_t>> OptInt(std::string_view key);
  Result<std::optional<double>> OptNumber(std::string_view key);
  Result<std::optional<bool>> OptBool(std::string_view key);
  const toml::table* SubTable(std::string_view key);            // marks consumed; nullptr if absent
  const toml::array* Array(std::string_view key);

  // { value = "<number> <unit>", source = "id", note = "..." } entries.
  Result<std::optional<Sourced<double>>> OptQuantity(std::string_view key, Dimension dim);
  Result<Sourced<double>> Quantity(std::string_view key, Dimension dim);
  Result<std::optional<Sourced<std::string>>> OptSourcedString(std::string_view key);
  Result<std::optional<Sourced<int>>> OptSourcedInt(std::string_view key);
  Result<std::optional<Sourced<double>>> OptSourcedNumber(std::string_view key);  // plain number, no unit
  Result<std::optional<Sourced<bool>>> OptSourcedBool(std::string_view key);
  // { <x> = [..], <y> = [..], source = "id", note = "..." }: a measured curve y(x), at least two points, x strictly
  // increasing and positive, every y a finite positive number (the caller checks y's range).
  Result<std::optional<Sourced<std::vector<std::pair<double, double>>>>> OptSourcedCurve(std::string_view key,
                                                                                        std::string_view x,
                                                                                        std::string_view y);

  // Error if any key present in the table was not read.
  Status CheckNoUnknownKeys() const;

  std::string Where(std::string_view key) const;  // "file: path.key"

 private:
  // The entry's table with its keys checked against `value_keys` (plus source, note, date), its source resolved.
  Result<const toml::table*> SourcedEntry(std::string_view key, std::string* source, std::string* note,
                                          std::vector<std::string_view> value_keys = {"value"});

  const toml::table& table_;
  std::string file_;
  std::string path_;
  const std::map<std::string, std::string>* sources_;
  std::set<std::string, std::less<>> used_;
};

// Reads the [sources] table (id -> citation) that every data file must have; values are non-empty strings.
Result<std::map<std::string, std::string>> ReadSources(TableReader& root, const std::string& file);

}  // namespace suanli::detail
