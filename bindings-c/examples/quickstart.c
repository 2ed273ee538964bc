/*
 * Quickstart: connect, set, get, conditional set, delete.
 *   ./quickstart [mqtt://localhost:1883]
 */
#include <string.h>

#include "common.h"

int main(int argc, char **argv) {
    mqstate_client *client = connect_to(argc > 1 ? argv[1] : "mqtt://localhost:1883");
    if (client == NULL) return 1;
    const char *key = "greeting", *value = "hello";
    bool applied = false;
    char *version = NULL;
    mqstate_status st = mqstate_client_set(client, (const uint8_t *)key, strlen(key),
                                           (const uint8_t *)value, strlen(value), NULL, &applied,
                                           &version);
    if (st != MQSTATE_STATUS_OK) return fail("set", st);
    printf("set greeting: applied=%d version=%s\n", applied, version);
    mqstate_string_free(version);

    mqstate_value *got = NULL;
    st = mqstate_client_get(client, (const uint8_t *)key, strlen(key), NULL, &got);
    if (st != MQSTATE_STATUS_OK) return fail("get", st);
    size_t len = 0;
    const uint8_t *data = mqstate_value_data(got, &len);
    printf("get greeting: %.*s @ %s\n", (int)len, (const char *)data, mqstate_value_version(got));
    mqstate_value_free(got);

    mqstate_set_options nx = {0};
    nx.condition = MQSTATE_SET_CONDITION_NX;
    st = mqstate_client_set(client, (const uint8_t *)key, strlen(key), (const uint8_t *)"bonjour",
                            7, &nx, &applied, NULL);
    if (st != MQSTATE_STATUS_OK) return fail("set nx", st);
    printf("set nx on an existing key: applied=%d\n", applied);

    uint64_t deleted = 0;
    st = mqstate_client_delete(client, (const uint8_t *)key, strlen(key), NULL, &deleted);
    if (st != MQSTATE_STATUS_OK) return fail("delete", st);
    printf("delete greeting: %llu key(s)\n", (unsigned long long)deleted);
    mqstate_client_close(client);
    return 0;
}
