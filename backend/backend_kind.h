// Which backend a run uses (backend/backend.h has what each one does).
#pragma once

namespace tessera {

enum class Backend { kCpu, kCuda };

}  // namespace tessera
