// A gtest fixture with the built-in catalogs loaded once per suite.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "suanli/hardware.h"
#include "suanli/model.h"

namespace suanli::testing {

class CatalogTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!models_) models_ = new ModelCatalog(*ModelCatalog::Load(CatalogOptions{}));
    if (!hw_) hw_ = new HardwareCatalog(*HardwareCatalog::Load(CatalogOptions{}));
  }
  static ModelSpec M(const std::string& id) { return *models_->Resolve(id); }
  static const GpuSpec& G(const std::string& id) { return **hw_->FindGpu(id); }
  // A model config kept with the validation cases (tests/validation/configs/).
  static ModelSpec Config(const std::string& rel) {
    std::ifstream in(std::string(SUANLI_SOURCE_DIR) + "/tests/validation/configs/" + rel);
    std::stringstream ss;
    ss << in.rdbuf();
    return *ParseHfConfig(ss.str(), rel);
  }
  // Loaded once for the whole test binary and left for the process to reclaim.
  static inline ModelCatalog* models_ = nullptr;
  static inline HardwareCatalog* hw_ = nullptr;
};

}  // namespace suanli::testing
