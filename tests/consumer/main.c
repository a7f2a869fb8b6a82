/* An outside project using an installed sluice: the README example, after a
 * check that the library it runs against is the one its headers describe. */
#include <sluice.h>
#include <pthread.h>
#include <stdio.h>

static void *producer(void *arg) {
    sl_chan *ch = arg;
    for (int i = 1; i <= 5; i++)
        sl_chan_send(ch, &i);            /* waits while full */
    sl_chan_close(ch);                   /* receivers drain, then see SL_CLOSED */
    return NULL;
}

int main(void) {
    if (sl_version_number() != SL_VERSION_NUMBER) {
        fprintf(stderr, "headers %s, library %s\n", SL_VERSION_STRING, sl_version_string());
        return 1;
    }
    printf("sluice %s\n", sl_version_string());
    sl_chan *ch;
    sl_chan_opts o = { .flavor = SL_MPMC, .elem_size = sizeof(int), .capacity = 2 };
    if (sl_chan_new(&ch, &o) != SL_OK) return 1;
    pthread_t t;
    pthread_create(&t, NULL, producer, ch);
    int v;
    while (sl_chan_recv(ch, &v) == SL_OK)
        printf("got %d\n", v);
    pthread_join(t, NULL);
    sl_chan_free(ch);
    return 0;
}
