// Package duration is the one duration type of every config file: a Go
// duration string ("30s", "1m30s", "250ms") or a bare number of seconds
// ("30", 30, 1.5), the same in YAML and JSON, everywhere a config takes a
// time. A bare number is never nanoseconds.
//
// Negative durations decode (so the caller can name the key when it rejects
// them); NaN, infinities and values past ~292 years do not.
package duration

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration as written in a config file.
type Duration time.Duration

// Std returns the duration as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

// String formats like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText writes "30s". YAML and JSON encoders both use it.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Parse reads "30s", "2m", "30" or "1.5" (seconds).
func Parse(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if v, err := time.ParseDuration(s); err == nil {
		return Duration(v), nil
	}
	seconds, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a duration like \"30s\" or \"2m\", or a number of seconds", s)
	}
	return fromSeconds(seconds, s)
}

func fromSeconds(seconds float64, text string) (Duration, error) {
	if math.IsNaN(seconds) || math.IsInf(seconds, 0) || math.Abs(seconds) > float64(math.MaxInt64)/float64(time.Second) {
		return 0, fmt.Errorf("duration %s: out of range", text)
	}
	return Duration(seconds * float64(time.Second)), nil
}

// UnmarshalText reads what Parse reads; YAML decoders use it for scalars,
// so `timeout: 30` and `timeout: 30s` mean the same.
func (d *Duration) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// UnmarshalJSON reads "30s" or a number of seconds.
func (d *Duration) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		return d.UnmarshalText([]byte(s))
	}
	var seconds float64
	if err := json.Unmarshal(data, &seconds); err != nil {
		return fmt.Errorf("duration %s: want a string like \"30s\" or a number of seconds", data)
	}
	v, err := fromSeconds(seconds, string(data))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
