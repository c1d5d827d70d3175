package stats_test

import (
	"fmt"

	"github.com/agentanvil/anvil/host/internal/stats"
)

func ExampleMeanCI() {
	scores := []float64{7, 8, 6, 9, 7, 8, 5, 7, 8, 6}
	ci, err := stats.MeanCI(scores, stats.DefaultLevel, stats.DefaultResamples, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("mean %.2f, 95%% CI [%.2f, %.2f]\n", ci.Estimate, ci.Low, ci.High)
	// Output: mean 7.10, 95% CI [6.40, 7.80]
}

func ExampleSpearman() {
	judge := []float64{7, 8, 3, 9, 5}
	human := []float64{4, 4, 2, 5, 3}
	rho, err := stats.Spearman(judge, human)
	fmt.Printf("%.3f %v\n", rho, err)
	// Output: 0.975 <nil>
}

func ExamplePairedPermutationTest() {
	before := []float64{7, 6, 8, 5, 9, 6, 7, 8}
	after := []float64{6, 6, 7, 4, 8, 6, 6, 7}
	res, _ := stats.PairedPermutationTest(before, after, stats.DefaultResamples, 1)
	fmt.Printf("diff %.3f p %.4f exact %v\n", res.MeanDifference, res.PValue, res.Exact)
	// Output: diff -0.750 p 0.0312 exact true
}

func ExampleWilsonCI() {
	ci, _ := stats.WilsonCI(10, 10, 0.95)
	fmt.Printf("%.3f [%.3f, %.3f]\n", ci.Estimate, ci.Low, ci.High)
	// Output: 1.000 [0.722, 1.000]
}
