package stats

import "fmt"

// CohenKappa returns Cohen's κ for two raters who each put the same items
// into categories: (pₒ − pₑ) / (1 − pₑ), pₒ the observed share of
// agreement and pₑ the agreement expected from each rater's marginal
// shares. For pass/fail, a and b are []bool. It is undefined for no items
// and when pₑ = 1 (both raters used one and the same category throughout).
func CohenKappa[T comparable](a, b []T) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("paired ratings of different lengths: %d and %d", len(a), len(b))
	}
	n := float64(len(a))
	if len(a) == 0 {
		return 0, undefined("Cohen's kappa of no items")
	}
	countA := map[T]float64{}
	countB := map[T]float64{}
	var agree float64
	for i := range a {
		countA[a[i]]++
		countB[b[i]]++
		if a[i] == b[i] {
			agree++
		}
	}
	var expected float64
	for category, ca := range countA {
		expected += ca * countB[category]
	}
	observed := agree / n
	expected /= n * n
	if expected >= 1 {
		return 0, undefined("Cohen's kappa when both raters use one category only")
	}
	return (observed - expected) / (1 - expected), nil
}

// Measurement is the level of measurement Krippendorff's α compares values
// at: the distance between two values.
type Measurement int

const (
	// Nominal values are categories: two values differ (distance 1) or not.
	Nominal Measurement = iota
	// Interval values are numbers: the distance is the squared difference.
	Interval
)

func (m Measurement) String() string {
	switch m {
	case Nominal:
		return "nominal"
	case Interval:
		return "interval"
	}
	return fmt.Sprintf("Measurement(%d)", int(m))
}

// KrippendorffAlpha returns Krippendorff's α, 1 − Dₒ/Dₑ, for units each
// rated by any number of raters: units[u] holds the values unit u received
// (a rater who did not rate it simply contributes nothing — missing values
// are absent, not NaN). Units with fewer than two values cannot be paired
// and are left out, as the coefficient defines. Nominal values are compared
// for equality (categories coded as numbers), Interval values by squared
// difference. It is undefined when fewer than two pairable values remain or
// when all pairable values are equal (Dₑ = 0).
//
// Both disagreements are sums over ordered pairs of distinct values,
//
//	Dₒ = 1/n Σ_u 1/(m_u − 1) Σ_{i≠j in u} δ(v_i, v_j)
//	Dₑ = 1/(n(n − 1)) Σ_{i≠j} δ(v_i, v_j)
//
// computed in closed form per unit (Σ_{i≠j}(v_i − v_j)² = 2m Σ(v − mean)²;
// Σ_{i≠j}[v_i ≠ v_j] = m² − Σ_c m_c²), so the cost is linear in the
// number of values.
func KrippendorffAlpha(units [][]float64, level Measurement) (float64, error) {
	if level != Nominal && level != Interval {
		return 0, fmt.Errorf("Krippendorff's alpha: unknown level of measurement %v", level)
	}
	var (
		pairable  []float64
		observedD float64
	)
	for u, values := range units {
		if err := checkFinite(fmt.Sprintf("unit %d value", u), values); err != nil {
			return 0, err
		}
		m := len(values)
		if m < 2 {
			continue
		}
		pairable = append(pairable, values...)
		observedD += pairDisagreement(values, level) / float64(m-1)
	}
	n := float64(len(pairable))
	if len(pairable) < 2 {
		return 0, undefined("Krippendorff's alpha with %d pairable values: want units with at least two values each", len(pairable))
	}
	expectedD := pairDisagreement(pairable, level) / (n * (n - 1))
	if expectedD == 0 {
		return 0, undefined("Krippendorff's alpha when every value is the same")
	}
	observedD /= n
	return 1 - observedD/expectedD, nil
}

// pairDisagreement is Σ_{i≠j} δ(v_i, v_j) over ordered pairs of values.
func pairDisagreement(values []float64, level Measurement) float64 {
	m := float64(len(values))
	if level == Interval {
		// Σ_{i≠j}(v_i − v_j)² = 2m Σ(v − mean)²; the centred form does not
		// lose precision the way 2mΣv² − 2(Σv)² does.
		var sum float64
		for _, v := range values {
			sum += v
		}
		mean := sum / m
		var squares float64
		for _, v := range values {
			squares += (v - mean) * (v - mean)
		}
		return 2 * m * squares
	}
	counts := map[float64]float64{}
	for _, v := range values {
		counts[v]++
	}
	same := 0.0
	for _, c := range counts {
		same += c * c
	}
	return m*m - same
}
