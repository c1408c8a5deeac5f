#include "common.hpp"
namespace oracle {


void register_misc() {}
}
