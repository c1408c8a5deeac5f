#include "common.hpp"
namespace oracle {

void register_containers() {}
void register_misc() {}
}
