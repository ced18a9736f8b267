package intent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Edit is an approver's change of an invocation's params before approving.
type Edit struct {
	By string    `json:"by"`
	At time.Time `json:"at"`
	// Diff is the change of the redacted params: what a human may see.
	Diff []Change `json:"diff"`
	// Digest is the intent digest after the edit: the one approved.
	Digest string `json:"digest"`
}

// Change is one changed value, at Path (a JSON pointer). From is absent for
// an added value, To for a removed one.
type Change struct {
	Path string          `json:"path"`
	From json.RawMessage `json:"from,omitempty"`
	To   json.RawMessage `json:"to,omitempty"`
}

// Diff lists the changes from before to after (JSON documents), by path:
// objects member by member, arrays of the same length element by
// element, anything else whole.
func Diff(before, after json.RawMessage) ([]Change, error) {
	a, err := decode(before)
	if err != nil {
		return nil, err
	}
	b, err := decode(after)
	if err != nil {
		return nil, err
	}
	var out []Change
	diff("", a, b, &out)
	return out, nil
}

func diff(path string, a, b any, out *[]Change) {
	if reflect.DeepEqual(a, b) {
		return
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for _, k := range keys(am, bm) {
			av, ina := am[k]
			bv, inb := bm[k]
			p := path + "/" + escape(k)
			switch {
			case !inb:
				*out = append(*out, Change{Path: p, From: encode(av)})
			case !ina:
				*out = append(*out, Change{Path: p, To: encode(bv)})
			default:
				diff(p, av, bv, out)
			}
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			diff(path+"/"+strconv.Itoa(i), as[i], bs[i], out)
		}
		return
	}
	*out = append(*out, Change{Path: path, From: encode(a), To: encode(b)})
}

// Hidden lists the changes from before to after (exact params) that their
// redacted forms, shownBefore and shownAfter, do not show (a secret
// replaced by another): each at the path of the redacted value that hides
// it, From and To being that redacted value, so that no secret, nor what a
// redacted value holds, is named.
func Hidden(before, after, shownBefore, shownAfter json.RawMessage) ([]Change, error) {
	var docs [4]any
	for i, doc := range []json.RawMessage{before, after, shownBefore, shownAfter} {
		v, err := decode(doc)
		if err != nil {
			return nil, err
		}
		docs[i] = v
	}
	var out []Change
	hidden("", docs[0], docs[1], docs[2], docs[3], &out)
	return out, nil
}

func hidden(path string, b, a, sb, sa any, out *[]Change) {
	if reflect.DeepEqual(b, a) {
		return
	}
	bm, bok := b.(map[string]any)
	am, aok := a.(map[string]any)
	sbm, sbok := sb.(map[string]any)
	sam, saok := sa.(map[string]any)
	if bok && aok && sbok && saok {
		for _, k := range keys(bm, am) {
			bv, inb := bm[k]
			av, ina := am[k]
			sbv, insb := sbm[k]
			sav, insa := sam[k]
			if inb && ina && insb && insa {
				hidden(path+"/"+escape(k), bv, av, sbv, sav, out)
				continue
			}
			// A key added, removed or itself redacted: shown alike, the
			// object is as far as the path may go; else the redacted
			// params show it.
			if reflect.DeepEqual(sb, sa) {
				*out = append(*out, Change{Path: path, From: encode(sb), To: encode(sa)})
				return
			}
		}
		return
	}
	bs, bok := b.([]any)
	as, aok := a.([]any)
	sbs, sbok := sb.([]any)
	sas, saok := sa.([]any)
	if bok && aok && sbok && saok && len(bs) == len(as) && len(as) == len(sbs) && len(sbs) == len(sas) {
		for i := range bs {
			hidden(path+"/"+strconv.Itoa(i), bs[i], as[i], sbs[i], sas[i], out)
		}
		return
	}
	if reflect.DeepEqual(sb, sa) {
		*out = append(*out, Change{Path: path, From: encode(sb), To: encode(sa)})
	}
}

// KeepSealed returns the params an approver's edit means: edited, where
// every value the approver left as they saw it (equal to the redacted
// params at its path) is the exact value again, so that a secret the
// approver could not see and did not change stays what the agent sent.
func KeepSealed(edited, redacted, exact json.RawMessage) (json.RawMessage, error) {
	e, err := decode(edited)
	if err != nil {
		return nil, err
	}
	r, err := decode(redacted)
	if err != nil {
		return nil, err
	}
	x, err := decode(exact)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(keep(e, r, x))
	if err != nil {
		return nil, fmt.Errorf("encoding params: %w", err)
	}
	return out, nil
}

func keep(e, r, x any) any {
	if reflect.DeepEqual(e, r) {
		return x
	}
	em, eok := e.(map[string]any)
	rm, rok := r.(map[string]any)
	xm, xok := x.(map[string]any)
	if eok && rok && xok {
		out := make(map[string]any, len(em))
		for k, ev := range em {
			rv, inr := rm[k]
			xv, inx := xm[k]
			if inr && inx {
				out[k] = keep(ev, rv, xv)
			} else {
				out[k] = ev
			}
		}
		return out
	}
	es, eok := e.([]any)
	rs, rok := r.([]any)
	xs, xok := x.([]any)
	if eok && rok && xok && len(es) == len(rs) && len(rs) == len(xs) {
		out := make([]any, len(es))
		for i := range es {
			out[i] = keep(es[i], rs[i], xs[i])
		}
		return out
	}
	return e
}

func decode(doc json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("params are not valid JSON: %w", err)
	}
	return v, nil
}

func encode(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

func keys(a, b map[string]any) []string {
	out := make([]string, 0, len(a)+len(b))
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// escape escapes a key for a JSON pointer (RFC 6901).
func escape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
