package sa

import (
	"encoding/base64"
	"testing"
)

func TestFromToken(t *testing.T) {
	jwt := func(payload string) string {
		return "e30." + base64.RawURLEncoding.EncodeToString([]byte(payload)) + ".sig"
	}
	tests := []struct {
		name, token, want string
	}{
		{"a ServiceAccount", jwt(`{"sub":"system:serviceaccount:olmv1-system:catalogd"}`), "olmv1-system/catalogd"},
		{"a user", jwt(`{"sub":"admin"}`), ""},
		{"no namespace", jwt(`{"sub":"system:serviceaccount::catalogd"}`), ""},
		{"not a JWT", "token", ""},
		{"not JSON", jwt(`sub`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := fromToken(tt.token)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("fromToken = %v, want an error", got)
				}
				return
			}
			if err != nil || got.String() != tt.want {
				t.Fatalf("fromToken = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestGetServiceAccountFromEnv(t *testing.T) {
	t.Setenv(EnvServiceAccount, "olmv1-system/operator-controller")
	if got, err := GetServiceAccount(); err != nil || got.String() != "olmv1-system/operator-controller" {
		t.Fatalf("GetServiceAccount = %v, %v", got, err)
	}
	t.Setenv(EnvServiceAccount, "operator-controller")
	if _, err := GetServiceAccount(); err == nil {
		t.Fatal("a value without a namespace was taken")
	}
}
