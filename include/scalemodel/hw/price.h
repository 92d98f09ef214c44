// The price per chip-hour an estimate uses: the user's (--price-per-chip-
// hour) when given, else the catalog's list price, else 0 (no price: costs
// are reported as null).
#ifndef SCALEMODEL_HW_PRICE_H_
#define SCALEMODEL_HW_PRICE_H_

#include "scalemodel/hw/chip.h"

namespace scalemodel::hw {

// USD per chip-hour: `override_usd` when > 0, else the catalog price of
// `chip`, else 0.
inline double PricePerChipHour(const Chip& chip, double override_usd) {
  if (override_usd > 0) return override_usd;
  return chip.price ? chip.price->usd_per_chip_hour : 0;
}

}  // namespace scalemodel::hw

#endif  // SCALEMODEL_HW_PRICE_H_
