// Command kstatus prints what sigs.k8s.io/cli-utils' kstatus (the status logic
// that Flux's health checks use) computes for Kubernetes objects.
//
// Stdin: JSON — one object, a List (`kubectl get … -o json`), or a stream of
// objects (`kubectl get … -w -o json`). Stdout: one line per object,
// `<kind>/<name> <Status>` (Current, InProgress, Failed, Terminating, …);
// with -v, the status message follows after a tab.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	verbose := flag.Bool("v", false, "print the status message after a tab")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: kubectl get KIND NAME -o json | kstatus [-v]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(os.Stdin, os.Stdout, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, verbose bool) error {
	dec := json.NewDecoder(in)
	dec.UseNumber() // keep integers integers (generation, observedGeneration)
	n := 0
	for {
		var v map[string]interface{}
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("reading JSON: %w", err)
		}
		objs, err := objects(v)
		if err != nil {
			return err
		}
		for _, o := range objs {
			u := &unstructured.Unstructured{Object: o}
			res, err := status.Compute(u)
			if err != nil {
				return fmt.Errorf("%s/%s: %w", u.GetKind(), u.GetName(), err)
			}
			if verbose {
				fmt.Fprintf(out, "%s/%s %s\t%s\n", u.GetKind(), u.GetName(), res.Status, res.Message)
			} else {
				fmt.Fprintf(out, "%s/%s %s\n", u.GetKind(), u.GetName(), res.Status)
			}
			n++
		}
	}
	if n == 0 {
		return errors.New("no object on stdin")
	}
	return nil
}

// objects returns a List's items, or the object itself; numbers become int64
// or float64 as unstructured expects.
func objects(v map[string]interface{}) ([]map[string]interface{}, error) {
	norm, ok := normalize(v).(map[string]interface{})
	if !ok {
		return nil, errors.New("not an object")
	}
	items, isList := norm["items"].([]interface{})
	if !isList {
		if _, has := norm["kind"]; !has {
			return nil, errors.New("an object without kind")
		}
		return []map[string]interface{}{norm}, nil
	}
	out := make([]map[string]interface{}, 0, len(items))
	for i, it := range items {
		m, ok := it.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("items[%d] is not an object", i)
		}
		out = append(out, m)
	}
	return out, nil
}

func normalize(v interface{}) interface{} {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []interface{}:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	default:
		return v
	}
}
