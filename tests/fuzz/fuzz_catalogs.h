// The bundled catalogs, loaded once per fuzz target process (shared by the targets that estimate with them).
#pragma once

#include "suanli/hardware.h"
#include "suanli/model.h"

namespace suanli_fuzz {

inline const suanli::HardwareCatalog& Hw() {
  static const auto* hw = new suanli::HardwareCatalog(*suanli::HardwareCatalog::Load(suanli::CatalogOptions{}));
  return *hw;
}
inline const suanli::ModelCatalog& Models() {
  static const auto* m = new suanli::ModelCatalog(*suanli::ModelCatalog::Load(suanli::CatalogOptions{}));
  return *m;
}

}  // namespace suanli_fuzz
