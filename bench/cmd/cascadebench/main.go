// Command cascadebench measures a judge cascade against its strong judge
// alone, live and through the providers' batch API: two scripted fake
// judges on loopback (host/judgetest, which also serves the Batch API), a
// synthetic dataset, and four `anvil-host run`s of one G-Eval metric —
// judge: strong and judge_cascade: [cheap, strong], each live and with
// --batch. It prints, per run, the USD per verified (scored) case, the
// share of cases that reached the strong judge, the verdict agreement with
// the live strong-only run, and the bill against it.
//
// The judges are scripted, so the figures measure the mechanism (routing,
// accounting), not a real model's calibration. Each case has a true score
// t in 0..10 (a hash of its id; threshold 0.5, so t >= 5 passes):
//
//   - strong: t, with candidates t: .9, t±1: .05 (in range);
//   - cheap on a clear case (t <= 3 or t >= 7): t, with candidates t: .8,
//     t±1: .1 — P(pass) 0 or 1, the strong judge's verdict;
//   - cheap on a hard case (t in 4..6): its raw score is t−1, t or t+1
//     (by the hash) with candidates raw−1: .3, raw: .4, raw+1: .3 — its
//     mass spread across the threshold unless the raw score is 3 or 7;
//   - cheap, on a share -wrong of all cases: confidently on the wrong side
//     (10−t with t's certainty): the errors a cascade cannot see.
//
// Prices are per million tokens: cheap 0.15 in / 0.60 out, strong 2.50 in
// / 10.00 out (the two judges see the same text, so the same token counts).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"

	"github.com/agentanvil/anvil/host/judgetest"
)

func main() {
	host := flag.String("host", "", "path to the anvil-host binary (required)")
	n := flag.Int("n", 1000, "cases")
	wrong := flag.Float64("wrong", 0.01, "share of cases on which the cheap judge is confidently wrong")
	band := flag.String("band", "0.15, 0.85", "escalate_band")
	work := flag.String("work", "", "work directory (default: a new temporary one, removed at the end)")
	concurrency := flag.Int("concurrency", 8, "anvil-host run --concurrency")
	flag.Parse()
	if *host == "" {
		fmt.Fprintln(os.Stderr, "cascadebench: -host is required")
		os.Exit(2)
	}
	if err := run(context.Background(), *host, *n, *wrong, *band, *work, *concurrency); err != nil {
		fmt.Fprintln(os.Stderr, "cascadebench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, host string, n int, wrong float64, band, work string, concurrency int) error {
	if work == "" {
		dir, err := os.MkdirTemp("", "anvil-cascade-bench.")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	cheap := judgetest.NewServer(judgetest.WithoutRecording(), judgetest.WithDefault(judgetest.ReplyFunc(scripted(false, wrong))))
	strong := judgetest.NewServer(judgetest.WithoutRecording(), judgetest.WithDefault(judgetest.ReplyFunc(scripted(true, wrong))))
	cheapURL, err := cheap.Start("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer cheap.Close()
	strongURL, err := strong.Start("127.0.0.1:0")
	if err != nil {
		return err
	}
	defer strong.Close()

	var cases strings.Builder
	for i := range n {
		fmt.Fprintf(&cases, `{"id": "case-%05d", "input": "Question case-%05d?", "actual_output": "An answer of about a dozen words, the same length for every case.", "expected_output": "The reference answer."}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(work, "cases.jsonl"), []byte(cases.String()), 0o644); err != nil {
		return err
	}
	judges := fmt.Sprintf(`judges:
  cheap:
    base_url: %s
    model: cheap-model
    api_key_env: ANVIL_BENCH_KEY
    supports_logprobs: true
    supports_json_schema: true
    price: {input_per_million: 0.15, output_per_million: 0.60}
  strong:
    base_url: %s
    model: strong-model
    api_key_env: ANVIL_BENCH_KEY
    supports_logprobs: true
    supports_json_schema: true
    price: {input_per_million: 2.50, output_per_million: 10.00}
`, cheapURL, strongURL)
	metric := func(judging string) string {
		return fmt.Sprintf(`version: 1
dataset: cases.jsonl
%smetrics:
  - name: correctness
    kind: geval
    threshold: 0.5
    gate: false
    %s
    params:
      evaluation_steps: ["Compare the answer with the reference.", "Penalise contradictions."]
      evaluation_params: [input, actual_output, expected_output]
`, judges, judging)
	}
	cascade := fmt.Sprintf("judge_cascade: [cheap, strong]\n    escalate_band: [%s]", band)
	// The batch runs send the cases' judge calls through the fake
	// servers' Batch API (at the price table's batch discount), polled
	// often so that the bench measures cost, not waiting.
	batch := []string{"--batch", "--batch-poll", "20ms", "--batch-flush", "100ms"}
	runs := []struct {
		name, judging string
		flags         []string
	}{
		{"strong-only", "judge: strong", nil},
		{"cascade", cascade, nil},
		{"batch", "judge: strong", batch},
		{"batch+cascade", cascade, batch},
	}
	type figures struct {
		verified, strongScorings int
		usd                      float64
		pass                     map[string]bool
		escalated                int
	}
	got := map[string]*figures{}
	for _, r := range runs {
		dir := filepath.Join(work, r.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		cfg := filepath.Join(work, r.name+".yaml")
		if err := os.WriteFile(cfg, []byte(metric(r.judging)), 0o644); err != nil {
			return err
		}
		args := append([]string{"run", "-c", cfg, "--output-dir", filepath.Join(dir, "out"),
			"--store", filepath.Join(dir, "store.db"), "--cache", "off", "--concurrency", strconv.Itoa(concurrency)}, r.flags...)
		cmd := exec.CommandContext(ctx, host, args...)
		cmd.Env = append(os.Environ(), "ANVIL_BENCH_KEY=bench")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%s: anvil-host run: %v\n%s", r.name, err, out)
		}
		f := &figures{pass: map[string]bool{}}
		if err := readRun(filepath.Join(dir, "out"), func(id, status string, usd float64, escalated bool) {
			f.usd += usd
			if status == "passed" || status == "failed" {
				f.verified++
				f.pass[id] = status == "passed"
			}
			if escalated || r.judging == "judge: strong" {
				f.strongScorings++ // a case the strong judge scored
			}
			if escalated {
				f.escalated++
			}
		}); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		got[r.name] = f
	}
	base := got["strong-only"]
	fmt.Printf("%d cases, cheap judge confidently wrong on %.1f%%, escalate_band [%s]\n\n", n, 100*wrong, band)
	fmt.Printf("%-14s %9s %12s %14s %16s %18s %16s\n", "run", "verified", "USD", "USD/verified", "reached strong", "verdicts differ", "of strong-only")
	for _, r := range runs {
		f := got[r.name]
		differ := 0
		for id, p := range base.pass {
			if q, ok := f.pass[id]; ok && q != p {
				differ++
			}
		}
		fmt.Printf("%-14s %9d %12.6f %14.3e %15.1f%% %17.2f%% %15.2f×\n", r.name, f.verified, f.usd, f.usd/float64(f.verified),
			100*float64(f.strongScorings)/float64(n), 100*float64(differ)/float64(len(base.pass)), f.usd/base.usd)
	}
	c := got["cascade"]
	fmt.Printf("\ncascade: %d of %d cases escalated; USD %.1f%% of strong-only\n", c.escalated, n, 100*c.usd/base.usd)
	return nil
}

// readRun calls f for each case's one metric result in dir/results.jsonl.
func readRun(dir string, f func(id, status string, usd float64, escalated bool)) error {
	file, err := os.Open(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		return err
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var line struct {
			CaseID  string `json:"case_id"`
			Metrics []struct {
				Status           string `json:"status"`
				EscalatedBecause string `json:"escalated_because"`
				Usage            struct {
					USD float64 `json:"usd"`
				} `json:"usage"`
			} `json:"metrics"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line, json.RejectUnknownMembers(false)); err != nil {
			return fmt.Errorf("results.jsonl: %w", err)
		}
		for _, m := range line.Metrics {
			f(line.CaseID, m.Status, m.Usage.USD, m.EscalatedBecause != "")
		}
	}
	return sc.Err()
}

var caseID = regexp.MustCompile(`case-\d{5}`)

// scripted is the strong or the cheap judge's reply (see the package
// comment).
func scripted(strong bool, wrong float64) judgetest.ReplyFunc {
	return func(req judgetest.RecordedRequest) judgetest.Reply {
		id := caseID.FindString(req.LastMessage())
		h := fnv.New64a()
		h.Write([]byte(id))
		x := h.Sum64()
		t := int(x % 11)
		noise := int((x/11)%3) - 1
		confidentlyWrong := float64((x/33)%10000)/10000 < wrong
		switch {
		case strong:
			return reply(t, map[int]float64{t: .9, t - 1: .05, t + 1: .05})
		case confidentlyWrong:
			return reply(10-t, map[int]float64{10 - t: .8, 9 - t: .1, 11 - t: .1})
		case t <= 3 || t >= 7:
			return reply(t, map[int]float64{t: .8, t - 1: .1, t + 1: .1})
		}
		raw := t + noise
		return reply(raw, map[int]float64{raw - 1: .3, raw: .4, raw + 1: .3})
	}
}

// reply is a G-Eval score reply for raw with the given candidates (those
// outside 0..10 dropped).
func reply(raw int, cands map[int]float64) judgetest.Reply {
	alts := map[string]float64{}
	for v, p := range cands {
		if v >= 0 && v <= 10 {
			alts[strconv.Itoa(v)] = p
		}
	}
	return judgetest.JSONScoreReply("Scripted.", strconv.Itoa(raw), alts)
}
