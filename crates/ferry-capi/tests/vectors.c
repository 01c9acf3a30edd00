/* The shared test vectors (tests/vectors/README.md) through the C API. The Rust test
 * (c_programs.rs) turns valid.json and invalid.json into tab-separated lines on stdin:
 *
 *   valid   NAME MESSAGE ENCODES(0|1) HEX JSON
 *   invalid NAME MESSAGE STAGE(validate|read) MAX_MESSAGE_LEN MAX_DEPTH MAX_ELEMENTS HEX KIND
 *           OFFSET PATH(entries joined by " > ")
 *
 * For a valid vector: encode JSON (if ENCODES) and compare with HEX; decode HEX and read it back
 * to JSON, compared as text. For an invalid one: decode HEX within the limits; a "validate"
 * vector must fail there, a "read" one when read whole, with KIND, OFFSET and PATH.
 * Prints "FAIL NAME: why" per disagreement, then "vectors: V valid, I invalid, F failed".
 *
 *   vectors SCHEMA_DIR FILE.proto... < lines
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ferry.h"

#define MAX_FIELDS 12

static ferry_schema *schema;
static int failed;

static void fail(const char *name, const char *why) {
    printf("FAIL %s: %s (last error: %s)\n", name, why, ferry_last_error());
    failed++;
}

/* Splits `line` at tabs (fields may be empty); returns the number of fields. */
static int split(char *line, char **fields) {
    int n = 0;
    fields[n++] = line;
    for (char *p = line; *p && n < MAX_FIELDS; p++) {
        if (*p == '\t') {
            *p = '\0';
            fields[n++] = p + 1;
        }
    }
    return n;
}

static uint8_t *unhex(const char *hex, size_t *len) {
    *len = strlen(hex) / 2;
    uint8_t *out = malloc(*len ? *len : 1);
    for (size_t i = 0; i < *len; i++) {
        unsigned byte;
        sscanf(hex + 2 * i, "%2x", &byte);
        out[i] = (uint8_t)byte;
    }
    return out;
}

/* The view's canonical JSON (malloc'd), or NULL with the status in *status. */
static char *to_json(const ferry_view *v, ferry_status *status) {
    size_t len;
    *status = ferry_view_to_json(v, NULL, 0, &len);
    if (*status != FERRY_BUFFER_TOO_SMALL) return NULL;
    char *text = malloc(len + 1);
    *status = ferry_view_to_json(v, text, len + 1, &len);
    if (*status != FERRY_OK) {
        free(text);
        return NULL;
    }
    return text;
}

static void check_valid(char **f) {
    const char *name = f[1], *message = f[2], *hex = f[4], *json = f[5];
    ferry_type *ty;
    if (ferry_schema_type(schema, message, &ty) != FERRY_OK) return fail(name, "no such type");
    if (strcmp(f[3], "1") == 0) {
        ferry_msg *m;
        size_t len;
        if (ferry_msg_from_json(ty, json, strlen(json), &m) != FERRY_OK) {
            fail(name, "JSON refused");
        } else {
            ferry_msg_encode_into(m, NULL, 0, &len);
            uint8_t *bytes = malloc(len ? len : 1);
            char *got = malloc(2 * len + 1);
            if (ferry_msg_encode_into(m, bytes, len, &len) != FERRY_OK) fail(name, "encode failed");
            for (size_t i = 0; i < len; i++) sprintf(got + 2 * i, "%02x", bytes[i]);
            got[2 * len] = '\0';
            if (strcmp(got, hex) != 0) fail(name, "encodes to other bytes");
            free(got);
            free(bytes);
            ferry_msg_free(m);
        }
    }
    size_t len;
    uint8_t *bytes = unhex(hex, &len);
    ferry_view *v;
    if (ferry_view_decode(ty, bytes, len, NULL, &v) != FERRY_OK) {
        fail(name, "does not decode");
    } else {
        ferry_status status;
        char *text = to_json(v, &status);
        if (!text) fail(name, "does not read back");
        else if (strcmp(text, json) != 0) fail(name, "reads back to other JSON");
        free(text);
        ferry_view_free(v);
    }
    free(bytes);
    ferry_type_free(ty);
}

static void check_error(const char *name, char **f) {
    const char *kind = f[8], *path = f[10];
    unsigned long long offset = strtoull(f[9], NULL, 10);
    if (strcmp(ferry_last_error_kind(), kind) != 0) fail(name, "another error kind");
    else if (ferry_last_error_offset() != offset) fail(name, "another offset");
    else if (strcmp(ferry_last_error_path(), path) != 0) fail(name, "another path");
}

static void check_invalid(char **f) {
    const char *name = f[1], *message = f[2], *stage = f[3];
    ferry_type *ty;
    if (ferry_schema_type(schema, message, &ty) != FERRY_OK) return fail(name, "no such type");
    ferry_limits limits = {strtoull(f[4], NULL, 10), (uint32_t)strtoul(f[5], NULL, 10),
                           strtoull(f[6], NULL, 10)};
    size_t len;
    uint8_t *bytes = unhex(f[7], &len);
    ferry_view *v;
    ferry_status status = ferry_view_decode(ty, bytes, len, &limits, &v);
    if (strcmp(stage, "validate") == 0) {
        if (status == FERRY_DECODE) check_error(name, f);
        else fail(name, "validates");
        if (status == FERRY_OK) ferry_view_free(v);
    } else if (status != FERRY_OK) {
        fail(name, "does not validate (a read-stage vector)");
    } else {
        char *text = to_json(v, &status);
        if (status == FERRY_DECODE) check_error(name, f);
        else fail(name, "reads whole");
        free(text);
        ferry_view_free(v);
    }
    free(bytes);
    ferry_type_free(ty);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s SCHEMA_DIR FILE.proto... < lines\n", argv[0]);
        return 2;
    }
    if (ferry_schema_load((const char **)&argv[2], (size_t)argc - 2, (const char **)&argv[1], 1,
                          &schema) != FERRY_OK) {
        fprintf(stderr, "schema: %s\n", ferry_last_error());
        return 1;
    }
    int valid = 0, invalid = 0;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n') line[n - 1] = '\0';
        char *f[MAX_FIELDS];
        int count = split(line, f);
        if (strcmp(f[0], "valid") == 0 && count == 6) {
            valid++;
            check_valid(f);
        } else if (strcmp(f[0], "invalid") == 0 && count == 11) {
            invalid++;
            check_invalid(f);
        } else {
            fail(f[0], "a line of neither form");
        }
    }
    free(line);
    ferry_schema_free(schema);
    printf("vectors: %d valid, %d invalid, %d failed\n", valid, invalid, failed);
    return failed ? 1 : 0;
}
