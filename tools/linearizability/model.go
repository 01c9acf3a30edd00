package main

import (
	"fmt"

	"github.com/anishathalye/porcupine"
)

// The sequential specification of `ferry kv`, checked one key at a time: a history is
// linearizable if and only if each key's sub-history is (operations on different keys commute),
// so a partition's state is one value and whether it exists.

// kvState is one key's value; present is false for a key never written or deleted.
type kvState struct {
	present bool
	value   string
}

// kvInput is what a client asked for.
type kvInput struct {
	op    string // put, get, append or delete
	key   string
	value string // put and append
}

// kvOutput is what the client was told. For an operation whose outcome is unknown (a timeout,
// a connection lost before the answer) the output is nil: it may or may not have taken effect,
// at any point after its call.
type kvOutput struct {
	// found: for get, whether the key existed; for delete, whether it existed before, when the
	// server says so (hasFound).
	found    bool
	hasFound bool
	value    string // get, when found
}

var kvModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			key := op.Input.(kvInput).key
			if _, seen := byKey[key]; !seen {
				keys = append(keys, key)
			}
			byKey[key] = append(byKey[key], op)
		}
		partitions := make([][]porcupine.Operation, 0, len(keys))
		for _, key := range keys {
			partitions = append(partitions, byKey[key])
		}
		return partitions
	},
	Init: func() interface{} { return kvState{} },
	Step: func(state, input, output interface{}) (bool, interface{}) {
		return step(state.(kvState), input.(kvInput), output)
	},
	DescribeOperation: func(input, output interface{}) string {
		in := input.(kvInput)
		var call string
		switch in.op {
		case "get", "delete":
			call = fmt.Sprintf("%s(%q)", in.op, in.key)
		default:
			call = fmt.Sprintf("%s(%q, %q)", in.op, in.key, in.value)
		}
		out, known := output.(*kvOutput)
		switch {
		case !known || out == nil:
			return call + " -> unknown"
		case in.op == "get" && out.found:
			return fmt.Sprintf("%s -> %q", call, out.value)
		case in.op == "get":
			return call + " -> not found"
		case in.op == "delete" && out.hasFound:
			return fmt.Sprintf("%s -> existed %v", call, out.found)
		}
		return call + " -> ok"
	},
	DescribeState: func(state interface{}) string {
		s := state.(kvState)
		if !s.present {
			return "(absent)"
		}
		return fmt.Sprintf("%q", s.value)
	},
}

// step applies one operation to a key's state: whether the answer the client got is one the
// state allows, and the state after it.
func step(state kvState, in kvInput, output interface{}) (bool, kvState) {
	out, _ := output.(*kvOutput)
	switch in.op {
	case "put":
		return true, kvState{present: true, value: in.value}
	case "append":
		return true, kvState{present: true, value: state.value + in.value}
	case "delete":
		if out != nil && out.hasFound && out.found != state.present {
			return false, state
		}
		return true, kvState{}
	case "get":
		if out == nil {
			return true, state
		}
		if out.found != state.present || (out.found && out.value != state.value) {
			return false, state
		}
		return true, state
	}
	return false, state
}
