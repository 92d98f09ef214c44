// Test helpers: the built-in catalog, loaded once.
#ifndef SCALEMODEL_TESTS_TESTING_CATALOG_H_
#define SCALEMODEL_TESTS_TESTING_CATALOG_H_

#include <gtest/gtest.h>

#include "scalemodel/catalog/catalog.h"
#include "scalemodel/ingest/hf_config.h"

namespace scalemodel::testing {

inline const catalog::Catalog& BuiltinCatalog() {
  static const catalog::Catalog kCatalog = [] {
    auto c = catalog::Catalog::Builtin();
    if (!c) {
      ADD_FAILURE() << c.error().ToString();
      return catalog::Catalog();
    }
    return *c;
  }();
  return kCatalog;
}

inline const hw::Chip& Chip(const std::string& name) {
  auto c = BuiltinCatalog().FindChip(name);
  if (!c) {
    ADD_FAILURE() << c.error().ToString();
    static hw::Chip empty;
    return empty;
  }
  return **c;
}

inline hw::System System(const std::string& spec) {
  auto s = BuiltinCatalog().FindSystem(spec);
  if (!s) {
    ADD_FAILURE() << s.error().ToString();
    return hw::System();
  }
  return *s;
}

// A catalog model by id (a test failure, and an empty spec, when unknown).
inline model::ModelSpec Model(const std::string& id) {
  auto m = ingest::FindModel(BuiltinCatalog(), id);
  if (!m) {
    ADD_FAILURE() << m.error().ToString();
    return model::ModelSpec();
  }
  return m->spec;
}

}  // namespace scalemodel::testing

#endif  // SCALEMODEL_TESTS_TESTING_CATALOG_H_
