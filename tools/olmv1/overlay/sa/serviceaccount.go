// Package sa stands in for operator-controller's internal/shared/util/sa
// when chartpilot builds OLM v1 (go build -overlay; see cluster/toolchain).
// operator-controller and catalogd ask it which ServiceAccount they run as,
// to cache that namespace's pull secrets. Upstream reads only the token
// Kubernetes mounts into a pod; on the local cluster they may run on the
// host, as a kubeconfig's user, with no token: $OLMV1_SERVICE_ACCOUNT
// (namespace/name) says it there.
package sa

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	k8stypes "k8s.io/apimachinery/pkg/types"
)

// EnvServiceAccount names the ServiceAccount (namespace/name) of a process
// that runs outside a pod.
const EnvServiceAccount = "OLMV1_SERVICE_ACCOUNT"

// tokenFile is where Kubernetes mounts a pod's ServiceAccount token.
const tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// GetServiceAccount is the ServiceAccount the process runs as.
func GetServiceAccount() (k8stypes.NamespacedName, error) {
	if v := os.Getenv(EnvServiceAccount); v != "" {
		ns, name, ok := strings.Cut(v, "/")
		if !ok || ns == "" || name == "" {
			return k8stypes.NamespacedName{}, fmt.Errorf("$%s %q: want namespace/name", EnvServiceAccount, v)
		}
		return k8stypes.NamespacedName{Namespace: ns, Name: name}, nil
	}
	token, err := os.ReadFile(tokenFile)
	if err != nil {
		return k8stypes.NamespacedName{}, fmt.Errorf("%w (outside a pod, set $%s)", err, EnvServiceAccount)
	}
	return fromToken(string(token))
}

// fromToken reads the subject of a ServiceAccount token,
// system:serviceaccount:NAMESPACE:NAME, without verifying it: the process
// only learns its own name from it.
func fromToken(token string) (k8stypes.NamespacedName, error) {
	parts := strings.Split(strings.TrimSpace(token), ".")
	if len(parts) != 3 {
		return k8stypes.NamespacedName{}, fmt.Errorf("%s is not a JWT", tokenFile)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return k8stypes.NamespacedName{}, fmt.Errorf("%s: %w", tokenFile, err)
	}
	var claims struct {
		Subject string `json:"sub"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return k8stypes.NamespacedName{}, fmt.Errorf("%s: %w", tokenFile, err)
	}
	f := strings.Split(claims.Subject, ":")
	if len(f) != 4 || f[0] != "system" || f[1] != "serviceaccount" || f[2] == "" || f[3] == "" {
		return k8stypes.NamespacedName{}, fmt.Errorf("%s: subject %q is not a ServiceAccount's", tokenFile, claims.Subject)
	}
	return k8stypes.NamespacedName{Namespace: f[2], Name: f[3]}, nil
}
