/*
 * Leader election: two candidates; one leads, resigns, and the other takes over. A
 * callback follows the leadership on a library thread.
 *   ./election [mqtt://localhost:1883]
 */
#include <string.h>

#include "common.h"

static void on_leader(void *ctx, const mqstate_sub_event *e) {
    (void)ctx;
    const char *leader = mqstate_sub_event_holder(e);
    printf("leader is now: %s\n", leader ? leader : "(nobody)");
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *url = argc > 1 ? argv[1] : "mqtt://localhost:1883";
    mqstate_client *a = connect_to(url), *b = connect_to(url);
    if (a == NULL || b == NULL) return 1;
    const char *name = "pump-controller";
    mqstate_election *ea = NULL, *eb = NULL;
    mqstate_subscription *leaders = NULL;
    char *token = NULL;
    mqstate_election_new(a, (const uint8_t *)name, strlen(name), "node-a", NULL, &ea);
    mqstate_election_new(b, (const uint8_t *)name, strlen(name), "node-b", NULL, &eb);
    mqstate_status st = mqstate_election_watch_leader(eb, &leaders);
    if (st != MQSTATE_STATUS_OK) return fail("watch", st);
    mqstate_subscription_set_callback(leaders, on_leader, NULL, NULL);

    st = mqstate_election_campaign(ea, 3000, 10000, NULL, &token);
    if (st != MQSTATE_STATUS_OK) return fail("campaign a", st);
    printf("node-a leads (token %s)\n", token);
    mqstate_string_free(token);
    bool elected = true;
    mqstate_election_try_campaign(eb, 3000, &elected);
    printf("node-b elected while node-a leads: %d\n", elected);
    mqstate_election_resign(ea, NULL);
    st = mqstate_election_campaign(eb, 3000, 10000, NULL, &token);
    if (st != MQSTATE_STATUS_OK) return fail("campaign b", st);
    printf("node-b leads (token %s), is_leader=%d\n", token, mqstate_election_is_leader(eb));
    mqstate_string_free(token);
    mqstate_election_resign(eb, NULL);

    mqstate_subscription_free(leaders);
    mqstate_election_free(ea);
    mqstate_election_free(eb);
    mqstate_client_close(a);
    mqstate_client_close(b);
    return elected ? 1 : 0;
}
