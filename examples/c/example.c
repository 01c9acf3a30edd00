/* Ferry's C API end to end, without a server: load a schema, build a message by field name and
 * number (a pool buffer referenced, not copied), encode it contiguously and as a gather list,
 * decode it and read every field in place, and see the errors. Exits 0 and prints
 * "example: ok" when every check holds.
 *
 *   cc -I include examples/c/example.c -L target/debug -lferry_capi -o example
 *   ./example examples/c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static int slice_is(ferry_slice s, const char *text) {
    return s.len == strlen(text) && memcmp(s.ptr, text, s.len) == 0;
}

static int inside(const uint8_t *p, const uint8_t *buf, size_t len) {
    return p >= buf && p < buf + len;
}

/* Builds the message; the blob's bytes are written into a pool buffer at *blob. */
static ferry_msg *build(const ferry_type *shape, ferry_pool *pool, const uint8_t **blob) {
    ferry_msg *m;
    CHECK(ferry_msg_new(shape, &m));
    uint32_t name = ferry_msg_field(m, "name"); /* by name, once */
    EXPECT(name == 1);
    CHECK(ferry_msg_set_bytes(m, name, (const uint8_t *)"triangle", 8));
    CHECK(ferry_msg_set_u64(m, 2, 42)); /* by number */
    CHECK(ferry_msg_set_f64(m, 3, 0.5));
    CHECK(ferry_msg_set_bool(m, 4, true));
    for (int i = 0; i < 3; i++) {
        ferry_msg *p;
        CHECK(ferry_msg_new_field(m, 5, &p));
        CHECK(ferry_msg_set_i32(p, 1, i));
        CHECK(ferry_msg_set_i32(p, 2, -i));
        CHECK(ferry_msg_push_msg(m, 5, p)); /* m takes p */
    }
    ferry_buf *buf; /* 4 KiB: referenced by the encoding, not copied */
    CHECK(ferry_buf_new(pool, 4096, &buf));
    memset(ferry_buf_data(buf), 0xab, ferry_buf_len(buf));
    *blob = ferry_buf_data(buf);
    CHECK(ferry_msg_set_buf(m, 6, buf)); /* m takes buf */
    CHECK(ferry_msg_push_bytes(m, 7, (const uint8_t *)"red", 3));
    CHECK(ferry_msg_push_bytes(m, 7, (const uint8_t *)"blue", 4));
    const char *keys[] = {"x", "a"};
    for (int i = 0; i < 2; i++) { /* map entries: kept in key order */
        ferry_msg *e;
        CHECK(ferry_msg_new_field(m, 8, &e));
        CHECK(ferry_msg_set_bytes(e, 1, (const uint8_t *)keys[i], 1));
        CHECK(ferry_msg_set_i64(e, 2, 7 - i));
        CHECK(ferry_msg_push_msg(m, 8, e));
    }
    ferry_msg *origin;
    CHECK(ferry_msg_new_field(m, 9, &origin));
    CHECK(ferry_msg_set_i32(origin, 1, -5));
    CHECK(ferry_msg_set_msg(m, 9, origin));
    for (int i = 1; i <= 3; i++) CHECK(ferry_msg_push_i32(m, 10, i * 10));

    /* Errors: a status, and the message says what and where. */
    EXPECT(ferry_msg_set_i32(m, 2, 1) == FERRY_TYPE_MISMATCH);
    EXPECT(strstr(ferry_last_error(), "example.Shape.id") != NULL);
    EXPECT(ferry_msg_set_bytes(m, 1, (const uint8_t *)"\xff", 1) == FERRY_TYPE_MISMATCH);
    EXPECT(ferry_msg_push_i32(m, 2, 1) == FERRY_TYPE_MISMATCH);
    EXPECT(ferry_msg_set_u64(m, 99, 1) == FERRY_TYPE_MISMATCH);
    EXPECT(ferry_msg_field(m, "nope") == 0);
    EXPECT(strstr(ferry_last_error(), "nope") != NULL);
    return m;
}

static void read_back(const ferry_type *shape, const uint8_t *bytes, size_t len) {
    ferry_view *v;
    CHECK(ferry_view_decode(shape, bytes, len, NULL, &v));
    ferry_slice s;
    CHECK(ferry_view_str(v, 1, &s));
    EXPECT(slice_is(s, "triangle") && inside(s.ptr, bytes, len)); /* in place */
    uint64_t id;
    double area;
    bool closed;
    CHECK(ferry_view_u64(v, 2, &id));
    CHECK(ferry_view_f64(v, 3, &area));
    CHECK(ferry_view_bool(v, 4, &closed));
    EXPECT(id == 42 && area == 0.5 && closed);
    EXPECT(ferry_view_count(v, 5) == 3);
    for (size_t i = 0; i < 3; i++) {
        ferry_view *p;
        int32_t x, y;
        CHECK(ferry_view_msg_at(v, 5, i, &p));
        CHECK(ferry_view_i32(p, 1, &x));
        CHECK(ferry_view_i32(p, 2, &y));
        EXPECT(x == (int32_t)i && y == -(int32_t)i);
        ferry_view_free(p);
    }
    CHECK(ferry_view_bytes(v, 6, &s));
    EXPECT(s.len == 4096 && s.ptr[0] == 0xab && s.ptr[4095] == 0xab && inside(s.ptr, bytes, len));
    ferry_slice tags[4];
    size_t ntags;
    CHECK(ferry_view_str_list(v, 7, tags, 4, &ntags)); /* every element in one call */
    EXPECT(ntags == 2 && slice_is(tags[0], "red") && slice_is(tags[1], "blue"));
    EXPECT(ferry_view_count(v, 7) == 2);
    EXPECT(ferry_view_count(v, 8) == 2);
    const char *keys[] = {"a", "x"};
    const int64_t values[] = {6, 7};
    for (size_t i = 0; i < 2; i++) {
        ferry_view *e;
        int64_t n;
        CHECK(ferry_view_msg_at(v, 8, i, &e));
        CHECK(ferry_view_str(e, 1, &s));
        CHECK(ferry_view_i64(e, 2, &n));
        EXPECT(slice_is(s, keys[i]) && n == values[i]);
        ferry_view_free(e);
    }
    ferry_view *origin;
    int32_t x, y;
    CHECK(ferry_view_msg(v, 9, &origin));
    CHECK(ferry_view_i32(origin, 1, &x));
    CHECK(ferry_view_i32(origin, 2, &y)); /* absent: its default */
    EXPECT(x == -5 && y == 0 && !ferry_view_has(origin, 2));
    ferry_view_free(origin);
    int32_t level;
    CHECK(ferry_view_i32_at(v, 10, 2, &level));
    EXPECT(level == 30);

    /* Errors: the wrong accessor, an index past the end. */
    EXPECT(ferry_view_i32(v, 2, &x) == FERRY_TYPE_MISMATCH);
    EXPECT(ferry_view_i32_at(v, 10, 3, &level) == FERRY_NOT_FOUND);
    EXPECT(ferry_view_field(v, "levels") == 10);

    /* The whole message as protobuf-JSON, and back. */
    size_t json_len;
    EXPECT(ferry_view_to_json(v, NULL, 0, &json_len) == FERRY_BUFFER_TOO_SMALL);
    char *json = malloc(json_len + 1);
    CHECK(ferry_view_to_json(v, json, json_len + 1, &json_len));
    const char *start = "{\"name\":\"triangle\",\"id\":\"42\",\"area\":0.5,\"closed\":true,";
    EXPECT(json_len == strlen(json) && strncmp(json, start, strlen(start)) == 0);
    ferry_msg *again; /* every value copied this time: the blob is not at the end */
    CHECK(ferry_msg_from_json(shape, json, json_len, &again));
    size_t again_len;
    EXPECT(ferry_msg_encode_into(again, NULL, 0, &again_len) == FERRY_BUFFER_TOO_SMALL);
    uint8_t *again_bytes = malloc(again_len);
    CHECK(ferry_msg_encode_into(again, again_bytes, again_len, &again_len));
    ferry_msg_free(again);
    ferry_view *again_view;
    CHECK(ferry_view_decode(shape, again_bytes, again_len, NULL, &again_view));
    char *again_json = malloc(json_len + 1);
    CHECK(ferry_view_to_json(again_view, again_json, json_len + 1, &json_len));
    EXPECT(strcmp(again_json, json) == 0);
    ferry_view_free(again_view);
    free(again_json);
    free(again_bytes);
    EXPECT(ferry_msg_from_json(shape, "{\"nope\":1}", 10, &again) == FERRY_JSON);
    free(json);
    ferry_view_free(v);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "examples/c";
    const char *files[] = {"example.proto"};
    ferry_schema *schema;
    CHECK(ferry_schema_load(files, 1, &dir, 1, &schema));
    ferry_type *shape;
    CHECK(ferry_schema_type(schema, "example.Shape", &shape));
    EXPECT(ferry_schema_type(schema, "example.Nope", &shape) == FERRY_NOT_FOUND);
    ferry_schema_free(schema); /* the type keeps what it needs */
    ferry_msg *none;
    EXPECT(ferry_msg_new(NULL, &none) == FERRY_INVALID_ARGUMENT); /* null: refused, named */
    EXPECT(strstr(ferry_last_error(), "type") != NULL);
    ferry_msg_free(NULL); /* frees ignore null */
    ferry_pool *pool;
    CHECK(ferry_pool_new(0, &pool));

    const uint8_t *blob;
    ferry_msg *m = build(shape, pool, &blob);

    /* Contiguous: ask the length, then encode into our memory. */
    size_t len;
    EXPECT(ferry_msg_encode_into(m, NULL, 0, &len) == FERRY_BUFFER_TOO_SMALL);
    uint8_t *bytes = malloc(len);
    CHECK(ferry_msg_encode_into(m, bytes, len, &len));

    /* Gather: the header segment, then the blob where it lies. */
    ferry_encoded *enc;
    CHECK(ferry_msg_encode(m, pool, &enc));
    ferry_msg_free(m); /* the encoding holds what it points at */
    size_t n;
    const ferry_iovec *iov = ferry_encoded_iov(enc, &n);
    EXPECT(n == 2 && iov[1].base == blob && iov[1].len == 4096);
    EXPECT(ferry_encoded_len(enc) == len);
    uint8_t *joined = malloc(len);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        memcpy(joined + at, iov[i].base, iov[i].len);
        at += iov[i].len;
    }
    EXPECT(at == len && memcmp(joined, bytes, len) == 0);
    ferry_encoded_free(enc);

    read_back(shape, bytes, len);
    read_back(shape, joined, len);

    /* Invalid input: a decode error with its byte offset. */
    ferry_view *v;
    EXPECT(ferry_view_decode(shape, bytes, len - 1, NULL, &v) == FERRY_DECODE);
    printf("truncated: %s (%s at offset %llu, in %s)\n", ferry_last_error(), ferry_last_error_kind(),
           (unsigned long long)ferry_last_error_offset(), ferry_last_error_path());
    EXPECT(strcmp(ferry_last_error_kind(), "RangeOutOfBounds") == 0);
    ferry_limits limits = ferry_limits_default();
    limits.max_message_len = 100;
    EXPECT(ferry_view_decode(shape, bytes, len, &limits, &v) == FERRY_DECODE);
    EXPECT(strcmp(ferry_last_error_kind(), "MessageTooLarge") == 0);

    free(joined);
    free(bytes);
    ferry_type_free(shape);
    ferry_pool_free(pool);
    puts("example: ok");
    return 0;
}
