package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentanvil/anvil/abi"
	"github.com/agentanvil/anvil/host/internal/conformance"
	"github.com/agentanvil/anvil/host/internal/plugin"
)

func newPluginCallCmd() *cobra.Command {
	var digest, transport, judgeMode string
	cmd := &cobra.Command{
		Use:   "call PATH EXPORT < request.json",
		Short: "Call one export of a plugin with a request read from stdin and print its JSON output",
		Long: `Load the plugin at PATH (sandboxed, as the host does), call EXPORT with
the JSON request on stdin and print the export's JSON output on stdout:
the edit-run loop of a plugin author. EXPORT is describe, prepare,
measure or node (the anvil_ prefix is optional); describe reads no input.

The output is what the host decoded from the plugin — strictly, and
checked as a run checks it — re-encoded as one line of JSON. A call that
fails (trap, timeout, ABI violation) prints the host's error as JSON on
stderr and exits 1.

Without --sha256 the digest is computed from the file and said so on
stderr. The judge is not granted unless --judge scripted: then judge
requests are answered by a local scripted judge (replies built from each
request's JSON Schema; no model, no key).`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, export := args[0], strings.TrimPrefix(args[1], "anvil_")
			switch export {
			case "describe", "prepare", "measure", "node":
			default:
				return usageErr(fmt.Errorf("plugin call: export %q: want describe, prepare, measure or node", args[1]))
			}
			if judgeMode != "none" && judgeMode != "scripted" {
				return usageErr(fmt.Errorf("plugin call: --judge %q: want none or scripted", judgeMode))
			}
			var input []byte
			if export != "describe" {
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return usageErr(fmt.Errorf("plugin call: reading stdin: %w", err))
				}
				input = b
			}
			out, err := callPlugin(cmd.Context(), cmd.ErrOrStderr(), path, export, digest, transport, judgeMode, input)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&digest, "sha256", "", "the digest the file must have (default: compute it and say so)")
	f.StringVar(&transport, "transport", "", "wasm or process (default: a Wasm module is wasm, anything else process)")
	f.StringVar(&judgeMode, "judge", "none", "none (judge not granted) or scripted (granted, answered by a local scripted judge)")
	return cmd
}

// callPlugin loads the plugin and runs one export on input.
func callPlugin(ctx context.Context, stderr io.Writer, path, export, digest, transport, judgeMode string, input []byte) ([]byte, error) {
	sum, err := plugin.FileDigest(path)
	if err != nil {
		return nil, usageErr(fmt.Errorf("plugin call: %w", err))
	}
	if digest == "" {
		fmt.Fprintf(stderr, "anvil-host: no --sha256 given: computed %s from %s\n", sum, path)
		digest = sum
	}
	if transport == "" {
		native, err := conformance.IsNative(path)
		if err != nil {
			return nil, usageErr(fmt.Errorf("plugin call: %w", err))
		}
		transport = plugin.TransportWasm
		if native {
			transport = plugin.TransportProcess
		}
	}
	decode := func(v any) error {
		dec := json.NewDecoder(bytes.NewReader(input))
		if err := dec.Decode(v); err != nil {
			return usageErr(fmt.Errorf("plugin call: the request on stdin is not a %s request: %w", export, err))
		}
		return nil
	}
	var (
		prepReq abi.PrepareRequest
		measReq abi.MeasureRequest
		nodeReq abi.NodeRequest
	)
	switch export {
	case "prepare":
		err = decode(&prepReq)
	case "measure":
		err = decode(&measReq)
	case "node":
		err = decode(&nodeReq)
	}
	if err != nil {
		return nil, err
	}

	rt, err := plugin.NewRuntime(ctx, plugin.RuntimeOptions{CacheDir: compileCacheDir()})
	if err != nil {
		return nil, err
	}
	defer rt.Close(ctx)
	opts := plugin.Options{Limits: plugin.Limits{PoolSize: 1}, Grants: plugin.Grants{Judge: judgeMode == "scripted"}}
	var j *conformance.ScriptedJudge
	if judgeMode == "scripted" {
		if j, err = conformance.StartScriptedJudge(); err != nil {
			return nil, err
		}
		defer j.Close()
	}
	svc := conformance.Services(j)
	load := rt.Load
	switch transport {
	case plugin.TransportProcess:
		load = rt.LoadProcess
	case plugin.TransportWasm:
	default:
		return nil, usageErr(fmt.Errorf("plugin call: --transport %q: want wasm or process", transport))
	}
	p, err := load(ctx, path, digest, opts)
	if err != nil {
		return nil, callFailed(stderr, err)
	}
	defer p.Close(context.WithoutCancel(ctx))
	var res any
	switch export {
	case "describe":
		res = p.Info().Descriptor
	case "prepare":
		res, err = p.Prepare(ctx, svc, &prepReq)
	case "measure":
		res, err = p.Measure(ctx, svc, &measReq)
	case "node":
		res, err = p.Node(ctx, svc, &nodeReq)
	}
	if err != nil {
		return nil, callFailed(stderr, err)
	}
	return json.Marshal(res)
}

// callFailed prints a failed call's error (as JSON when it is the host's
// typed error) and exits 1.
func callFailed(stderr io.Writer, err error) error {
	if ae, ok := err.(*abi.Error); ok {
		b, _ := json.Marshal(ae)
		fmt.Fprintf(stderr, "%s\n", b)
	} else {
		fmt.Fprintln(stderr, "anvil-host:", err)
	}
	return &exitError{code: exitVerifyFailed}
}
