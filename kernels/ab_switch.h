// The TESSERA_* switches of A/B studies (docs/ARCHITECTURE.md names each where its rule is):
// read from the environment, never part of a run's options or its result.
#pragma once
#include <cstdlib>
#include <cstring>

namespace tessera {

// Whether the environment variable `name` is set to exactly `value`.
inline bool switch_is(const char* name, const char* value) {
    const char* v = std::getenv(name);
    return v != nullptr && std::strcmp(v, value) == 0;
}

}  // namespace tessera
