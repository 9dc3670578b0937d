#include "idem/uuid.h"

#include <gtest/gtest.h>

TEST(Uuid, Placeholder) {}
