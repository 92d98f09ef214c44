// Plan strings: the degrees (`--plan dp=8,fsdp=16,tp=4`, ParsePlan) and a
// whole printed plan key (`dp=2,fsdp=512 mb=1 remat=none order=fsdp>dp`,
// ParsePlanKey). An accepted plan must have positive degrees whose product
// stays within the documented 2^24 chips.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"
#include "scalemodel/estimate/training.h"

namespace se = scalemodel::estimate;
using scalemodel::fuzz::AsText;
using scalemodel::fuzz::Fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 512) return 0;
  std::string_view t = AsText(data, size);
  if (auto p = se::ParsePlan(t)) {
    const int degrees[] = {p->dp, p->fsdp, p->tp, p->pp, p->ep, p->cp};
    long long product = 1;
    for (int d : degrees) {
      if (d < 1) Fail("ParsePlan degree below 1", d);
      product *= d;
      if (product > (1LL << 24)) Fail("ParsePlan product past 2^24", product);
    }
    (void)p->ToString();
    (void)se::ParsePlan(p->ToString());
  }
  se::TrainingConfig config;
  if (se::ParsePlanKey(t, &config)) {
    if (config.layout.micro_batch < 0) {
      Fail("ParsePlanKey micro batch", config.layout.micro_batch);
    }
  }
  (void)se::ParseSchedule(t);
  return 0;
}
