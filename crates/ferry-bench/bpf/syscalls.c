// SPDX-License-Identifier: (MIT OR Apache-2.0)
// ferry-bench's syscall counter: every syscall a watched thread enters adds one to its entry in
// `counts` (key: the thread id, as the kernel numbers it). User space watches a thread by
// inserting its id (at most 1,024 over a process's life); other threads cost a failed lookup.
// Attached to the raw tracepoint sys_enter (no tracefs needed) by `harness::syscalls`.
// Rebuild with ./build.sh (clang -target bpf); the object is committed so builds need no clang.
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

SEC("raw_tracepoint/sys_enter")
int ferry_count_syscalls(void *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *n = bpf_map_lookup_elem(&counts, &tid);
	if (n)
		__sync_fetch_and_add(n, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
