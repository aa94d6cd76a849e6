package cluster_test

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/chartpilot/chartpilot/cluster"
	"github.com/chartpilot/chartpilot/cluster/clustertest"
)

// The local cluster comes back whole after any of its components dies:
// each in turn is killed (SIGKILL, its whole process group), `cluster up`
// starts it again, and then every component is healthy, the node is Ready
// and a Deployment's pods are all Ready again. kwok stays down until the
// node lifecycle controller has found the node unreachable and marked its
// pods not Ready, as a long outage of the API server does: a kubelet would
// report its pods ready again once back, and kwok must too.
func TestEveryComponentComesBackWhole(t *testing.T) {
	clustertest.SkipIfShort(t)
	ctx := context.Background()
	cs, _ := clients(t)
	ns := namespace(t, cs)
	kubectl(t, "-n", ns, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "--replicas=2")
	kubectl(t, "-n", ns, "wait", "--for=condition=Available", "deployment/web", "--timeout=90s")

	for _, s := range env.Cluster.Status(ctx) {
		t.Run(s.Name, func(t *testing.T) {
			if !s.Running {
				t.Fatalf("%s not running before the kill", s.Name)
			}
			kill(t, s.PID)
			if s.Name == cluster.Kwok {
				waitNodeNotReady(t, cs, ns)
			}
			began := time.Now()
			if err := env.Cluster.Up(ctx); err != nil {
				t.Fatalf("up after killing %s: %v", s.Name, err)
			}
			t.Logf("up restarted %s in %s", s.Name, time.Since(began).Round(10*time.Millisecond))
			for _, st := range env.Cluster.Status(ctx) {
				if !st.Running || !st.Healthy {
					t.Errorf("%s: running %v, healthy %v: %s", st.Name, st.Running, st.Healthy, st.Error)
				}
				if st.Name == s.Name && st.PID == s.PID {
					t.Errorf("%s still has pid %d", st.Name, st.PID)
				}
			}
			began = time.Now()
			waitWhole(t, cs, ns)
			t.Logf("node and pods Ready %s after up", time.Since(began).Round(10*time.Millisecond))
		})
	}
}

// kill kills pid's process group and waits for pid to be reaped (this
// test binary started the shared cluster, so it is the parent): a killed
// process shows as a zombie while its other threads, which hold its
// sockets, still exit.
func kill(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing %d: %v", pid, err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("process %d did not exit after SIGKILL", pid)
	}
}

// waitNodeNotReady waits for the node lifecycle controller to find the
// node's heartbeats missing and mark the pods of web in ns not Ready.
func waitNodeNotReady(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	began := time.Now()
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, cluster.NodeName, metav1.GetOptions{})
		if err != nil || nodeReady(n) {
			return false, nil
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(pods.Items) == 0 {
			return false, nil
		}
		for i := range pods.Items {
			if podReady(&pods.Items[i]) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the node or its pods stayed Ready with kwok down: %v", err)
	}
	t.Logf("node and pods not Ready %s after kwok died", time.Since(began).Round(time.Second))
}

// waitWhole waits for the node and every pod of the Deployment web in ns to
// be Ready, with all its replicas available.
func waitWhole(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	var why string
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, cluster.NodeName, metav1.GetOptions{})
		if err != nil || !nodeReady(n) {
			why = fmt.Sprintf("node not Ready (%v)", err)
			return false, nil
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		ready := 0
		for i := range pods.Items {
			if podReady(&pods.Items[i]) {
				ready++
			}
		}
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			why = err.Error()
			return false, nil
		}
		if ready != len(pods.Items) || d.Status.AvailableReplicas != 2 {
			why = fmt.Sprintf("%d of %d pods Ready, %d replicas available", ready, len(pods.Items), d.Status.AvailableReplicas)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("not whole again: %s", why)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
