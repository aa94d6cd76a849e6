package backup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/chartpilot/chartpilot/operator/backup/api"
	"github.com/chartpilot/chartpilot/operator/backup/mover"
)

// targetCheckTimeout bounds the look at an S3 store before a backup.
const targetCheckTimeout = 10 * time.Second

// targetName names a target for people.
func targetName(t api.Target) string {
	if t.S3 != nil {
		return "s3://" + t.S3.Bucket + "/" + t.S3.Prefix + " at " + t.S3.Endpoint
	}
	if t.PVC != nil {
		return "claim " + t.PVC.ClaimName
	}
	return "no target"
}

// checkTarget tells whether a backup can write to its target: the claim
// exists, or the credentials Secret holds both keys and the bucket exists.
// A non-empty reason means the backup fails with it (err says why); an
// error without one is worth retrying.
func (o *Options) checkTarget(ctx context.Context, ns string, t api.Target) (reason string, err error) {
	switch {
	case t.PVC != nil && t.S3 != nil, t.PVC == nil && t.S3 == nil:
		return ReasonInvalidSpec, errors.New("spec.target must name one of pvc and s3")
	case t.PVC != nil:
		var pvc corev1.PersistentVolumeClaim
		err := o.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.PVC.ClaimName}, &pvc)
		if apierrors.IsNotFound(err) {
			return ReasonTargetUnavailable, fmt.Errorf("target PersistentVolumeClaim %s/%s does not exist", ns, t.PVC.ClaimName)
		}
		if err != nil {
			return "", fmt.Errorf("reading the target claim %s: %w", t.PVC.ClaimName, err)
		}
		return "", nil
	}
	store, reason, err := o.s3Store(ctx, ns, t.S3)
	if reason != "" || err != nil {
		return reason, err
	}
	c, err := store.Client()
	if err != nil {
		return ReasonInvalidSpec, err
	}
	ctx, cancel := context.WithTimeout(ctx, targetCheckTimeout)
	defer cancel()
	ok, err := c.BucketExists(ctx, t.S3.Bucket)
	switch {
	case err != nil:
		return ReasonTargetUnavailable, fmt.Errorf("%s: %w", targetName(t), err)
	case !ok:
		return ReasonTargetUnavailable, fmt.Errorf("%s: the bucket does not exist", targetName(t))
	}
	return "", nil
}

// s3Store reads an S3 target's credentials.
func (o *Options) s3Store(ctx context.Context, ns string, t *api.S3Target) (mover.S3, string, error) {
	var s corev1.Secret
	err := o.Reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.CredentialsSecret}, &s)
	if apierrors.IsNotFound(err) {
		return mover.S3{}, ReasonTargetUnavailable, fmt.Errorf("the credentials Secret %s/%s of %s does not exist", ns, t.CredentialsSecret, targetName(api.Target{S3: t}))
	}
	if err != nil {
		return mover.S3{}, "", fmt.Errorf("reading Secret %s: %w", t.CredentialsSecret, err)
	}
	id, secret := s.Data[api.S3AccessKeyIDKey], s.Data[api.S3SecretAccessKeyKey]
	if len(id) == 0 || len(secret) == 0 {
		return mover.S3{}, ReasonTargetUnavailable, fmt.Errorf("Secret %s/%s lacks %s or %s", ns, t.CredentialsSecret, api.S3AccessKeyIDKey, api.S3SecretAccessKeyKey)
	}
	return mover.S3{Endpoint: t.Endpoint, Bucket: t.Bucket, Region: t.Region, Insecure: t.Insecure, AccessKeyID: string(id), SecretAccessKey: string(secret)}, "", nil
}
