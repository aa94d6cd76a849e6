# The operator image: the chartpilot runtime (chartpilot-operator, a static
# binary) and the charts it serves, run as a non-root user. `make docker-build`
# builds the same image without a container engine.
ARG CHARTPILOT_IMAGE=chartpilot-operator:latest
FROM ${CHARTPILOT_IMAGE}

ENV HOME=/opt/helm
COPY watches.yaml ${HOME}/watches.yaml
COPY helm-charts  ${HOME}/helm-charts
WORKDIR ${HOME}
USER 65532:65532

ENTRYPOINT ["/usr/local/bin/chartpilot-operator", "run", "--watches-file=/opt/helm/watches.yaml"]
