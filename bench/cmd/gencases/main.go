// Command gencases writes N synthetic test cases as JSONL for the load
// harness: deterministic for a given -seed, with realistic field sizes
// (input ~40 words, actual_output ~80 words, expected_output ~30 words,
// each varying by about ±25%).
//
//	gencases -n 200 -o cases.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

var vocabulary = strings.Fields(`
the a an of to in for on with by from about into over under between after before during
system service request response latency cache database query index table record field value
customer order invoice payment refund account balance transfer policy contract clause term
model judge metric score threshold evaluation dataset sample batch pipeline release deploy
network server client endpoint token budget limit retry timeout error failure success result
user manager team engineer analyst report summary document section paragraph sentence claim
river mountain city country capital population climate weather season harvest market price
quickly carefully roughly exactly usually rarely often always never mostly partly fully
large small recent early late simple complex reliable stable secure private public shared
increase reduce measure compare explain describe verify confirm update migrate configure
because although however therefore while unless whereas since until so and but or
first second third final main other several many few each every both either neither
`)

var questionStarts = []string{
	"How does", "Why does", "What happens when", "Can you explain how", "What is the best way to ensure",
	"Under which conditions does", "Describe how", "Summarise why",
}

func main() {
	n := flag.Int("n", 200, "number of cases")
	out := flag.String("o", "-", "output file (- for stdout)")
	seed := flag.Uint64("seed", 1, "random seed (same seed, same cases)")
	flag.Parse()

	var w io.Writer = os.Stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "gencases:", err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	if err := write(bw, *n, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gencases:", err)
		os.Exit(1)
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gencases:", err)
		os.Exit(1)
	}
}

type testCase struct {
	ID             string `json:"id"`
	Input          string `json:"input"`
	ActualOutput   string `json:"actual_output"`
	ExpectedOutput string `json:"expected_output"`
}

func write(w io.Writer, n int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 0x616e76696c))
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := range n {
		c := testCase{
			ID:             fmt.Sprintf("case-%06d", i+1),
			Input:          question(r, around(r, 40)),
			ActualOutput:   prose(r, around(r, 80)),
			ExpectedOutput: prose(r, around(r, 30)),
		}
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}

// around returns n ± 25%.
func around(r *rand.Rand, n int) int {
	d := n / 4
	return n - d + r.IntN(2*d+1)
}

func question(r *rand.Rand, words int) string {
	start := questionStarts[r.IntN(len(questionStarts))]
	body := prose(r, max(words-len(strings.Fields(start)), 3))
	body = strings.TrimSuffix(body, ".")
	return start + " " + strings.ToLower(body[:1]) + body[1:] + "?"
}

// prose returns about words words in sentences of 8 to 16 words.
func prose(r *rand.Rand, words int) string {
	var b strings.Builder
	left := words
	for left > 0 {
		k := min(8+r.IntN(9), left)
		if left-k < 4 { // no tiny trailing sentence
			k = left
		}
		for j := range k {
			w := vocabulary[r.IntN(len(vocabulary))]
			if j == 0 {
				if b.Len() > 0 {
					b.WriteByte(' ')
				}
				w = strings.ToUpper(w[:1]) + w[1:]
			} else {
				b.WriteByte(' ')
				if r.IntN(12) == 0 { // a number now and then, in place of a word
					w = fmt.Sprint(2 + r.IntN(998))
				}
			}
			b.WriteString(w)
		}
		b.WriteByte('.')
		left -= k
	}
	return b.String()
}
