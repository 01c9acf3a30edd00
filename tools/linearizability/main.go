// Command ferry-linearizability checks a recorded history of `ferry kv` operations for
// linearizability with porcupine (github.com/anishathalye/porcupine v1.3.1).
//
//	ferry-linearizability [--timeout 60s] [--html FILE] HISTORY.jsonl
//
// The history is JSON Lines, one completed or abandoned operation per line:
//
//	{"client":0,"op":"put","key":"k1","value":"a","call":1200,"return":3400,"outcome":"ok"}
//	{"client":1,"op":"get","key":"k1","call":2000,"return":2900,"outcome":"ok","found":true,"value":"a"}
//	{"client":2,"op":"append","key":"k1","value":"b","call":3000,"outcome":"unknown"}
//	{"client":3,"op":"delete","key":"k1","call":4100,"return":4500,"outcome":"ok","found":true}
//
// op is put, get, append or delete. call and return are nanoseconds on one monotonic clock shared
// by every client (the recorder's), and the interval between them is closed. outcome is "ok" (the
// server acknowledged it), "fail" (the server refused it before applying it, such as a redirect
// to the leader: it is dropped) or "unknown" (no answer: it may have taken effect at any time after
// its call, so it stays open to the end of the history; an unknown get says nothing and is
// dropped). found is required on an ok get, and optional on a delete (whether the key existed).
//
// Exit status: 0 linearizable, 1 not linearizable (the HTML visualization says where), 2 the
// history could not be read, 3 the checker ran out of time without a verdict.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/anishathalye/porcupine"
)

// record is one line of the history file.
type record struct {
	Client  *int    `json:"client"`
	Op      string  `json:"op"`
	Key     *string `json:"key"`
	Value   *string `json:"value"`
	Call    *int64  `json:"call"`
	Return  *int64  `json:"return"`
	Outcome string  `json:"outcome"`
	Found   *bool   `json:"found"`
}

// summary counts what a history held and what the checker was given.
type summary struct {
	lines, checked, unknown, dropped int
	keys                             map[string]struct{}
}

func main() {
	timeout := flag.Duration("timeout", time.Minute, "give up without a verdict after this long")
	html := flag.String("html", "", "where to write the visualization when the history is not linearizable (default: HISTORY.html)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: ferry-linearizability [--timeout 60s] [--html FILE] HISTORY.jsonl")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	path := flag.Arg(0)
	file, err := os.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry-linearizability:", err)
		os.Exit(2)
	}
	ops, sum, err := readHistory(file, path)
	file.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ferry-linearizability:", err)
		os.Exit(2)
	}
	result, info := porcupine.CheckOperationsVerbose(kvModel, ops, *timeout)
	fmt.Printf("%s: %d lines, %d operations checked over %d keys (%d with unknown outcome, %d refused or unanswered reads dropped)\n",
		path, sum.lines, sum.checked, len(sum.keys), sum.unknown, sum.dropped)
	switch result {
	case porcupine.Ok:
		fmt.Println("linearizable")
	case porcupine.Illegal:
		out := *html
		if out == "" {
			out = path + ".html"
		}
		if err := porcupine.VisualizePath(kvModel, info, out); err != nil {
			fmt.Fprintln(os.Stderr, "ferry-linearizability: writing the visualization:", err)
		} else {
			fmt.Println("visualization:", out)
		}
		fmt.Println("NOT linearizable")
		os.Exit(1)
	default:
		fmt.Printf("unknown: no verdict within %s\n", *timeout)
		os.Exit(3)
	}
}

// readHistory parses and validates a history; an error names the line and the field.
func readHistory(r io.Reader, name string) ([]porcupine.Operation, summary, error) {
	sum := summary{keys: map[string]struct{}{}}
	var ops []porcupine.Operation
	var open []int // indexes in ops of operations with unknown outcome
	var last int64
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; scanner.Scan(); line++ {
		text := scanner.Bytes()
		if len(text) == 0 {
			continue
		}
		sum.lines++
		op, keep, err := parseRecord(text)
		if err != nil {
			return nil, sum, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if !keep {
			sum.dropped++
			continue
		}
		last = max(last, op.Call, op.Return)
		if op.Output == nil {
			open = append(open, len(ops))
			sum.unknown++
		}
		sum.keys[op.Input.(kvInput).key] = struct{}{}
		ops = append(ops, op)
	}
	if err := scanner.Err(); err != nil {
		return nil, sum, fmt.Errorf("%s: %w", name, err)
	}
	// An operation with no answer may take effect at any time after its call: it stays open past
	// every other event, which the checker treats as open forever.
	for _, i := range open {
		ops[i].Return = last + 1
	}
	sum.checked = len(ops)
	return ops, sum, nil
}

// parseRecord turns one line into an operation; keep is false for what carries no information
// (a refused operation, an unanswered read).
func parseRecord(text []byte) (porcupine.Operation, bool, error) {
	var rec record
	if err := json.Unmarshal(text, &rec); err != nil {
		return porcupine.Operation{}, false, err
	}
	switch {
	case rec.Client == nil || *rec.Client < 0:
		return porcupine.Operation{}, false, errors.New(`"client" must be a number >= 0`)
	case rec.Key == nil:
		return porcupine.Operation{}, false, errors.New(`"key" is missing`)
	case rec.Call == nil:
		return porcupine.Operation{}, false, errors.New(`"call" is missing`)
	}
	in := kvInput{op: rec.Op, key: *rec.Key}
	switch rec.Op {
	case "put", "append":
		if rec.Value == nil {
			return porcupine.Operation{}, false, fmt.Errorf(`%s has no "value"`, rec.Op)
		}
		in.value = *rec.Value
	case "get", "delete":
	default:
		return porcupine.Operation{}, false, fmt.Errorf(`"op" is %q: expected put, get, append or delete`, rec.Op)
	}
	op := porcupine.Operation{ClientId: *rec.Client, Input: in, Call: *rec.Call}
	switch rec.Outcome {
	case "fail":
		return op, false, nil
	case "unknown":
		if rec.Op == "get" {
			return op, false, nil
		}
		op.Output = nil
		return op, true, nil
	case "ok":
	default:
		return op, false, fmt.Errorf(`"outcome" is %q: expected ok, fail or unknown`, rec.Outcome)
	}
	if rec.Return == nil {
		return op, false, errors.New(`an ok operation has no "return"`)
	}
	if *rec.Return < *rec.Call {
		return op, false, fmt.Errorf(`"return" %d is before "call" %d`, *rec.Return, *rec.Call)
	}
	op.Return = *rec.Return
	out := &kvOutput{}
	switch {
	case rec.Op == "get" && rec.Found == nil:
		return op, false, errors.New(`an ok get has no "found"`)
	case rec.Op == "get" && *rec.Found:
		if rec.Value == nil {
			return op, false, errors.New(`a get that found its key has no "value"`)
		}
		out.value = *rec.Value
	}
	if rec.Found != nil {
		out.found, out.hasFound = *rec.Found, true
	}
	op.Output = out
	return op, true, nil
}
