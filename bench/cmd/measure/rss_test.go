package main

import "testing"

func TestParseStatus(t *testing.T) {
	full := "Name:\tanvil-host\nVmHWM:\t  95312 kB\nVmRSS:\t   95312 kB\nRssAnon:\t   28060 kB\nRssFile:\t   67252 kB\nRssShmem:\t       0 kB\nThreads:\t12\n"
	tests := []struct {
		name    string
		in      string
		want    rssParts
		wantErr bool
	}{
		{"linux status", full, rssParts{Anon: 28060, File: 67252, Shmem: 0}, false},
		{"missing RssShmem", "RssAnon:\t1 kB\nRssFile:\t2 kB\n", rssParts{}, true},
		{"not a number", "RssAnon:\tx kB\nRssFile:\t2 kB\nRssShmem:\t0 kB\n", rssParts{}, true},
		{"other unit", "RssAnon:\t1 MB\nRssFile:\t2 kB\nRssShmem:\t0 kB\n", rssParts{}, true},
		{"empty", "", rssParts{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStatus: err = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Fatalf("parseStatus = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPeaks(t *testing.T) {
	var k peaks
	for _, p := range []rssParts{{10, 50, 0}, {30, 20, 1}, {20, 45, 0}} {
		k.add(p)
	}
	want := peaks{Anon: 30, File: 50, Shmem: 1, AtMax: rssParts{20, 45, 0}, Samples: 3}
	if k != want {
		t.Fatalf("peaks = %+v, want %+v", k, want)
	}
}
