// Placeholder: tests arrive with the room.
#include <gtest/gtest.h>
