/* muSer (a 24-byte key and ten 100-byte fields, ferry_bench.Record) through the C API: build and
 * encode contiguously, then decode and read every field in place. Run by benches/muser.rs, which
 * times the Rust generated-shape code the same way in the same run and prints the ratios.
 *
 *   muser PROTO_DIR ITERATIONS   prints: len, encode_ns, decode_ns, checksum
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "ferry.h"

#define REPS 5

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void check(ferry_status s, const char *what) {
    if (s != FERRY_OK) {
        fprintf(stderr, "%s: %s\n", what, ferry_last_error());
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s PROTO_DIR ITERATIONS\n", argv[0]);
        return 2;
    }
    long iterations = atol(argv[2]);
    const char *files[] = {"record.proto"};
    ferry_schema *schema;
    check(ferry_schema_load(files, 1, (const char **)&argv[1], 1, &schema), "schema");
    ferry_type *ty;
    check(ferry_schema_type(schema, "ferry_bench.Record", &ty), "type");
    ferry_schema_free(schema);

    /* The same bytes as the Rust side: byte j of buffer b is b * 31 + j. */
    uint8_t key[24], fields[10][100];
    for (int j = 0; j < 24; j++) key[j] = (uint8_t)j;
    for (int b = 0; b < 10; b++)
        for (int j = 0; j < 100; j++) fields[b][j] = (uint8_t)((b + 1) * 31 + j);

    static uint8_t out[4096];
    size_t len = 0;
    double encode = 1e300, decode = 1e300;
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < iterations; i++) {
            ferry_msg *m;
            check(ferry_msg_new(ty, &m), "new");
            check(ferry_msg_set_bytes(m, 1, key, sizeof key), "key");
            for (int b = 0; b < 10; b++) check(ferry_msg_push_bytes(m, 2, fields[b], 100), "field");
            check(ferry_msg_encode_into(m, out, sizeof out, &len), "encode");
            ferry_msg_free(m);
        }
        double t = (now_ns() - t0) / (double)iterations;
        if (t < encode) encode = t;
    }
    unsigned long long checksum = 0;
    for (int rep = 0; rep < REPS; rep++) {
        double t0 = now_ns();
        for (long i = 0; i < iterations; i++) {
            checksum = 0; /* each message's own, as on the Rust side */
            ferry_view *v;
            ferry_slice s;
            check(ferry_view_decode(ty, out, len, NULL, &v), "decode");
            check(ferry_view_bytes(v, 1, &s), "key");
            checksum += s.len + s.ptr[0];
            ferry_slice list[16];
            size_t n;
            check(ferry_view_bytes_list(v, 2, list, 16, &n), "fields");
            for (size_t b = 0; b < n && b < 16; b++) checksum += list[b].len + list[b].ptr[list[b].len - 1];
            ferry_view_free(v);
        }
        double t = (now_ns() - t0) / (double)iterations;
        if (t < decode) decode = t;
    }
    ferry_type_free(ty);
    printf("len %zu\nencode_ns %.1f\ndecode_ns %.1f\nchecksum %llu\n", len, encode, decode,
           checksum);
    return 0;
}
