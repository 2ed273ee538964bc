// The header compiles as C++ (and links: every handle type, enum and options struct is
// usable from C++ code).
#include <mqstate.h>

#include <cstdio>
#include <cstring>

int main() {
    mqstate_settings *settings = nullptr;
    if (mqstate_settings_new(&settings) != MQSTATE_STATUS_OK) return 1;
    if (mqstate_settings_set(settings, "client_id", "cpp-check") != MQSTATE_STATUS_OK) return 1;
    mqstate_set_options options;
    std::memset(&options, 0, sizeof options);
    options.condition = MQSTATE_SET_CONDITION_NX;
    mqstate_call_options call = {nullptr, 1000, nullptr, true, nullptr, nullptr};
    (void)call;
    mqstate_cache_stats stats = {};
    (void)stats;
    mqstate_settings_free(settings);
    std::printf("%s %s\n", mqstate_version(), mqstate_status_name(MQSTATE_STATUS_NOT_HELD));
    return 0;
}
