// Command argo-health runs an Argo CD health check written in Lua the way Argo
// CD runs a `resource.customizations.health.<group>_<Kind>` script from
// argocd-cm, and prints the health it returns.
//
// Usage: kubectl get KIND NAME -o json | argo-health SCRIPT.lua
//
// Stdin: JSON — one object, a List (`kubectl get … -o json`), or a stream of
// objects (`kubectl get … -w -o json`). Stdout: one line per object,
// {"status":"Healthy|Progressing|Suspended|Degraded|Missing|Unknown","message":"…"}.
// A Lua error, or a script that returns no table, exits 1 (Argo CD would show
// the resource as Unknown with that error).
//
// What is copied from Argo CD (argoproj/argo-cd util/lua/lua.go, VM.runLua and
// ExecuteHealthLua; gitops-engine pkg/health/health.go, GetResourceHealth):
//   - a resource with metadata.deletionTimestamp is Progressing "Pending
//     deletion" and the script is not run;
//   - gopher-lua with SkipOpenLibs: only package, base and table are opened
//     (plus a safe os with time and date, left out here: our scripts use
//     neither). No string, no math: a check from argocd-cm runs without them
//     unless `resource.customizations.useOpenLibs.<group>_<Kind>: "true"`.
//     Built-in checks shipped inside Argo CD do get the standard libraries;
//     ours must not count on it;
//   - a 1 second deadline;
//   - the object becomes the global `obj`: JSON integers are Lua numbers (the
//     controller's unstructured objects hold int64), maps are tables, arrays
//     are 1-based tables;
//   - the value left on top of the stack must be a table; its status must be
//     one of Argo CD's codes, otherwise the health is Unknown "Lua returned an
//     invalid health status".
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

const invalidHealthStatus = "Lua returned an invalid health status"

type health struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	if len(os.Args) != 2 || os.Args[1] == "-h" || os.Args[1] == "--help" {
		fmt.Fprintln(os.Stderr, "usage: kubectl get KIND NAME -o json | argo-health SCRIPT.lua")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "argo-health:", err)
		os.Exit(1)
	}
	if err := run(string(script), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "argo-health:", err)
		os.Exit(1)
	}
}

func run(script string, in io.Reader, out io.Writer) error {
	dec := json.NewDecoder(in)
	dec.UseNumber()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	n := 0
	for {
		var v interface{}
		if err := dec.Decode(&v); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("reading JSON: %w", err)
		}
		for _, o := range objects(normalize(v)) {
			h, err := resourceHealth(o, script)
			if err != nil {
				return fmt.Errorf("%v/%v: %w", o["kind"], name(o), err)
			}
			if err := enc.Encode(h); err != nil {
				return err
			}
			n++
		}
	}
	if n == 0 {
		return errors.New("no object on stdin")
	}
	return nil
}

func name(o map[string]interface{}) interface{} {
	if m, ok := o["metadata"].(map[string]interface{}); ok {
		return m["name"]
	}
	return nil
}

// objects returns a List's items (kind List or <Kind>List), or the object itself.
func objects(v interface{}) []map[string]interface{} {
	o, ok := v.(map[string]interface{})
	if !ok {
		return nil
	}
	kind, _ := o["kind"].(string)
	if items, ok := o["items"].([]interface{}); ok && strings.HasSuffix(kind, "List") {
		var out []map[string]interface{}
		for _, it := range items {
			if m, ok := it.(map[string]interface{}); ok {
				out = append(out, m)
			}
		}
		return out
	}
	return []map[string]interface{}{o}
}

// normalize turns JSON numbers into int64 (integers) or float64, as the
// unstructured objects in Argo CD's controller hold them.
func normalize(v interface{}) interface{} {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []interface{}:
		for i := range x {
			x[i] = normalize(x[i])
		}
		return x
	case map[string]interface{}:
		for k := range x {
			x[k] = normalize(x[k])
		}
		return x
	}
	return v
}

// resourceHealth is gitops-engine's GetResourceHealth with a Lua override.
func resourceHealth(obj map[string]interface{}, script string) (health, error) {
	if m, ok := obj["metadata"].(map[string]interface{}); ok && m["deletionTimestamp"] != nil {
		return health{Status: "Progressing", Message: "Pending deletion"}, nil
	}
	return executeHealthLua(obj, script)
}

func executeHealthLua(obj map[string]interface{}, script string) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, pair := range []struct {
		n string
		f lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(pair.f), NRet: 0, Protect: true}, lua.LString(pair.n)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", decodeValue(l, obj))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	ret := l.Get(-1)
	t, ok := ret.(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("expect table output from Lua script, not %s", ret.Type().String())
	}
	var h health
	for field, dst := range map[string]*string{"status": &h.Status, "message": &h.Message} {
		switch v := t.RawGetString(field).(type) {
		case lua.LString:
			*dst = string(v)
		case *lua.LNilType:
		default:
			// Argo CD encodes the table to JSON and unmarshals it into strings: this fails there too
			return health{}, fmt.Errorf("json: cannot unmarshal %s into field HealthStatus.%s of type string", v.Type().String(), field)
		}
	}
	switch h.Status {
	case "Unknown", "Progressing", "Suspended", "Healthy", "Degraded", "Missing":
		return h, nil
	}
	return health{Status: "Unknown", Message: invalidHealthStatus}, nil
}

// decodeValue is Argo CD's conversion of the object into Lua values.
func decodeValue(l *lua.LState, value interface{}) lua.LValue {
	switch x := value.(type) {
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case json.Number:
		return lua.LString(x)
	case []interface{}:
		arr := l.CreateTable(len(x), 0)
		for _, item := range x {
			arr.Append(decodeValue(l, item))
		}
		return arr
	case map[string]interface{}:
		tbl := l.CreateTable(0, len(x))
		for k, item := range x {
			tbl.RawSetH(lua.LString(k), decodeValue(l, item))
		}
		return tbl
	}
	return lua.LNil
}
