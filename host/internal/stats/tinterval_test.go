package stats

import (
	"errors"
	"math"
	"testing"
)

// The quantiles are scipy.stats.t.ppf(p, nu).
func TestStudentTQuantile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ p, nu, want float64 }{
		{0.975, 1, 12.706204736174698},
		{0.975, 2, 4.302652729749464},
		{0.975, 9, 2.2621571628540993},
		{0.95, 4, 2.13184678632665},
		{0.975, 99, 1.9842169515086827},
	} {
		if got := StudentTQuantile(tc.p, tc.nu); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("StudentTQuantile(%v, %v) = %v, want %v", tc.p, tc.nu, got, tc.want)
		}
	}
}

func TestMeanTCI(t *testing.T) {
	t.Parallel()
	// The mean 0.5 ± t(0.975, 3) · sd/√n = 3.182446305284263 · 0.2581988897/2.
	ci, err := MeanTCI([]float64{0.2, 0.4, 0.6, 0.8}, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ci.Low-0.0891479486) > 1e-9 || math.Abs(ci.High-0.9108520514) > 1e-9 || ci.N != 4 || ci.Estimate != 0.5 {
		t.Errorf("MeanTCI = %+v, want [0.0891479486, 0.9108520514] around 0.5", ci)
	}
	ci, err = MeanTCI([]float64{0.7, 0.7}, 0.95)
	if err != nil || ci.Low != 0.7 || ci.High != 0.7 {
		t.Errorf("equal values: %+v, %v; want a zero-width interval at 0.7", ci, err)
	}
	if _, err := MeanTCI([]float64{0.7}, 0.95); !errors.Is(err, ErrUndefined) {
		t.Errorf("one value: err %v, want ErrUndefined", err)
	}
}
