// SPDX-License-Identifier: (MIT OR Apache-2.0)
// Ferry's AF_XDP receive program: an IPv4 UDP packet to the port in `ports[0]` goes to the
// AF_XDP socket bound to the queue it arrived on (`xsks`, keyed by queue index); everything
// else (ARP, other ports, IPv6, fragments, a queue without a socket) passes to the kernel.
// "xdp.frags": it takes packets over one page (multi-buffer) and reads only the headers, which
// are in the first buffer.
// Rebuild with ./build.sh (clang -target bpf); the object is committed so builds need no clang.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks SEC(".maps");

// The session's UDP port, in network byte order.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u16);
} ports SEC(".maps");

SEC("xdp.frags")
int ferry_redirect(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5)
		return XDP_PASS;
	// Fragments go to the kernel: only a first fragment would even have the UDP header.
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	struct udphdr *udp = (void *)ip + ip->ihl * 4;
	if ((void *)(udp + 1) > end)
		return XDP_PASS;
	__u32 zero = 0;
	__u16 *port = bpf_map_lookup_elem(&ports, &zero);
	if (!port || udp->dest != *port)
		return XDP_PASS;
	// No socket on this queue: the low bits of the flags are the action then.
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
