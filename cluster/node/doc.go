// Package node prepares a host to be the local cluster's real node: one that
// runs containers with containerd, runc and CNI, with a kubelet and
// kube-proxy, as processes of the host. It checks what the host must offer
// (Preflight, naming everything Missing at once), provides what Debian's
// packages, kernel modules and a mount can (ProvideHost), writes the agents'
// configuration (Write), sets up the node's
// network namespace and kernel settings (Prepare) and removes every trace of
// pods on the host (Cleanup).
//
// The node never shares what a Kubernetes node of the host itself uses.
// kube-proxy's and the kubelet's iptables chains have fixed names (KUBE-*),
// so rules of theirs in the host's tables could not be told apart from the
// host's own: containerd, the kubelet and kube-proxy run in a network
// namespace of the node's own (NetNS, as a kind node's container has), which
// holds the pod bridge, every rule they write and the pods' routes; deleting
// it deletes all of them, and no host table is read or written. A veth pair
// (HostLink on the host, with HostIP; the node's end with NodeIP) links it
// to the host: the API server, the registry and the object store listen on
// HostIP, which only this host and its node reach, and the host routes the
// pod network to NodeIP. Pods' cgroups live under CgroupRoot, not the
// kubelet's default /kubepods, and everything on disk under the node's
// directory. Everything else of the cluster stays on 127.0.0.1.
//
// The network namespace, the link and the cgroup root are named for
// chartpilot and belong to the machine, so one real node runs per machine
// (see Claim).
//
// Stage olm/cluster of chart -> scaffold -> bundle -> catalog ->
// olm/cluster -> doctor -> cmd: it may import earlier stages, the runtime
// and internal/, and must not import a later stage (doctor, cmd/).
package node
