package main

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func check(t *testing.T, history string) porcupine.CheckResult {
	t.Helper()
	ops, _, err := readHistory(strings.NewReader(history), "test")
	if err != nil {
		t.Fatalf("reading the history: %v", err)
	}
	return porcupine.CheckOperationsTimeout(kvModel, ops, 0)
}

func TestVerdicts(t *testing.T) {
	cases := []struct {
		name, history string
		want          porcupine.CheckResult
	}{
		{"a read concurrent with a write sees either state", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"return":10,"outcome":"ok"}
{"client":1,"op":"get","key":"k","call":5,"return":8,"outcome":"ok","found":false}
{"client":2,"op":"get","key":"k","call":6,"return":9,"outcome":"ok","found":true,"value":"a"}`, porcupine.Ok},
		{"an acknowledged write read back as absent later is a lost write", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"return":10,"outcome":"ok"}
{"client":1,"op":"get","key":"k","call":100,"return":110,"outcome":"ok","found":false}`, porcupine.Illegal},
		{"a stale read after a newer acknowledged write", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"return":10,"outcome":"ok"}
{"client":0,"op":"put","key":"k","value":"b","call":20,"return":30,"outcome":"ok"}
{"client":1,"op":"get","key":"k","call":40,"return":50,"outcome":"ok","found":true,"value":"a"}`, porcupine.Illegal},
		{"appends concatenate in order", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"return":10,"outcome":"ok"}
{"client":0,"op":"append","key":"k","value":"b","call":20,"return":30,"outcome":"ok"}
{"client":1,"op":"get","key":"k","call":40,"return":50,"outcome":"ok","found":true,"value":"ab"}`, porcupine.Ok},
		{"appends read in the wrong order", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"return":10,"outcome":"ok"}
{"client":0,"op":"append","key":"k","value":"b","call":20,"return":30,"outcome":"ok"}
{"client":1,"op":"get","key":"k","call":40,"return":50,"outcome":"ok","found":true,"value":"ba"}`, porcupine.Illegal},
		{"an unanswered write may take effect late", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"outcome":"unknown"}
{"client":1,"op":"get","key":"k","call":10,"return":20,"outcome":"ok","found":false}
{"client":1,"op":"get","key":"k","call":30,"return":40,"outcome":"ok","found":true,"value":"a"}`, porcupine.Ok},
		{"an unanswered write, once seen, cannot vanish", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"outcome":"unknown"}
{"client":1,"op":"get","key":"k","call":10,"return":20,"outcome":"ok","found":true,"value":"a"}
{"client":1,"op":"get","key":"k","call":30,"return":40,"outcome":"ok","found":false}`, porcupine.Illegal},
		{"a refused write never happened", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"return":5,"outcome":"fail"}
{"client":1,"op":"get","key":"k","call":10,"return":20,"outcome":"ok","found":true,"value":"a"}`, porcupine.Illegal},
		{"delete reports whether the key existed", `
{"client":0,"op":"put","key":"k","value":"a","call":0,"return":10,"outcome":"ok"}
{"client":0,"op":"delete","key":"k","call":20,"return":30,"outcome":"ok","found":false}`, porcupine.Illegal},
		{"keys are independent", `
{"client":0,"op":"put","key":"x","value":"1","call":0,"return":10,"outcome":"ok"}
{"client":1,"op":"put","key":"y","value":"2","call":0,"return":10,"outcome":"ok"}
{"client":2,"op":"delete","key":"x","call":20,"return":30,"outcome":"ok","found":true}
{"client":2,"op":"get","key":"y","call":40,"return":50,"outcome":"ok","found":true,"value":"2"}
{"client":2,"op":"get","key":"x","call":40,"return":50,"outcome":"ok","found":false}`, porcupine.Ok},
	}
	for _, c := range cases {
		if got := check(t, c.history); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

func TestBadInputNamesLineAndField(t *testing.T) {
	cases := []struct{ history, want string }{
		{`{"client":0,"op":"put","key":"k","call":0,"return":1,"outcome":"ok"}`, `test:1: put has no "value"`},
		{"\n" + `{"client":0,"op":"get","key":"k","call":0,"return":1,"outcome":"ok"}`, `test:2: an ok get has no "found"`},
		{`{"client":0,"op":"incr","key":"k","call":0,"return":1,"outcome":"ok"}`, `test:1: "op" is "incr"`},
		{`{"client":0,"op":"get","key":"k","call":5,"return":1,"outcome":"ok","found":false}`, `test:1: "return" 1 is before "call" 5`},
		{`{"client":0,"op":"get","key":"k","call":5,"return":9,"outcome":"maybe","found":false}`, `test:1: "outcome" is "maybe"`},
		{`{"op":"get","key":"k","call":5}`, `test:1: "client" must be`},
		{`not json`, `test:1: invalid character`},
	}
	for _, c := range cases {
		_, _, err := readHistory(strings.NewReader(c.history), "test")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("history %q: got error %v, want one starting %q", c.history, err, c.want)
		}
	}
}
