// The generated FlatBuffers accessors of schema/program.fbs (namespace tessera::fb).
#pragma once

#include "tessera/schema/program_generated.h"
