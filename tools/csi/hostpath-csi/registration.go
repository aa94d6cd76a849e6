package main

import (
	"context"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registration answers the kubelet's plugin watcher, which finds the
// socket in its plugins_registry directory, asks who is there and where
// its CSI endpoint is, and then calls NodeGetInfo to register the node
// with the driver (the CSINode object). That is node-driver-registrar's
// whole job; the driver does it itself.
type registration struct {
	// The generated service (kubelet 1.36 on) wants its Unimplemented
	// server embedded, so that a method added to the API answers
	// Unimplemented instead of breaking the build.
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
	logf           func(string, ...any)
}

// supportedVersions are the CSI versions the kubelet may speak to us.
var supportedVersions = []string{"1.0.0"}

func (r registration) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type: registerapi.CSIPlugin, Name: r.name, Endpoint: r.endpoint, SupportedVersions: supportedVersions,
	}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, st *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if st.PluginRegistered {
		r.logf("registered with the kubelet")
	} else {
		r.logf("the kubelet refused the registration: %s", st.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
