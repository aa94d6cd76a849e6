package bundle

import (
	"testing"

	"github.com/blang/semver/v4"
)

func TestLowestKubeVersion(t *testing.T) {
	tests := []struct {
		constraint string
		want       string
		bounded    bool
		wantErr    bool
	}{
		{constraint: ">=1.25.0-0", want: "1.25.0", bounded: true},
		{constraint: "^1.10.0-0", want: "1.10.0", bounded: true},
		{constraint: ">= 1.19.0-0 < 1.30.0-0", want: "1.19.0", bounded: true},
		{constraint: ">1.19", want: "1.20.0", bounded: true}, // Masterminds reads 1.19 as 1.19.x
		{constraint: ">1.19.3", want: "1.19.4", bounded: true},
		{constraint: "~1.21", want: "1.21.0", bounded: true},
		{constraint: "1.20.x", want: "1.20.0", bounded: true},
		{constraint: ">=1.28 || >=1.22 <1.24", want: "1.22.0", bounded: true},
		{constraint: "v1.26.3", want: "1.26.3", bounded: true},
		{constraint: "<1.30", want: "0.0.0", bounded: false},
		{constraint: ">=1.30 <1.20", wantErr: true},
		{constraint: "not a version", wantErr: true},
	}
	for _, tt := range tests {
		v, bounded, err := lowestKubeVersion(tt.constraint)
		if (err != nil) != tt.wantErr {
			t.Errorf("lowestKubeVersion(%q) error %v, want error %v", tt.constraint, err, tt.wantErr)
			continue
		}
		if err == nil && (v.String() != tt.want || bounded != tt.bounded) {
			t.Errorf("lowestKubeVersion(%q) = %s, bounded %v; want %s, %v", tt.constraint, v, bounded, tt.want, tt.bounded)
		}
	}
}

func TestLowestKubeVersionFrom(t *testing.T) {
	from := semver.MustParse("1.25.0")
	tests := []struct {
		constraint, want string
		bounded, wantErr bool
	}{
		{constraint: ">=1.19.0-0", want: "1.25.0"},
		{constraint: ">=1.27.0-0", want: "1.27.0", bounded: true},
		{constraint: "<1.24 || >=1.29", want: "1.29.0", bounded: true},
		{constraint: "<1.24", wantErr: true},
	}
	for _, tt := range tests {
		v, bounded, err := lowestKubeVersionFrom(tt.constraint, from)
		if (err != nil) != tt.wantErr || err == nil && (v.String() != tt.want || bounded != tt.bounded) {
			t.Errorf("lowestKubeVersionFrom(%q, 1.25.0) = %s, %v, %v; want %s, %v, error %v", tt.constraint, v, bounded, err, tt.want, tt.bounded, tt.wantErr)
		}
	}
}
