# The operator image: the chartpilot runtime and the charts it serves.
ARG CHARTPILOT_IMAGE=chartpilot:latest
FROM ${CHARTPILOT_IMAGE}

ENV HOME=/opt/helm
COPY watches.yaml ${HOME}/watches.yaml
COPY helm-charts  ${HOME}/helm-charts
WORKDIR ${HOME}
USER 65532:65532

ENTRYPOINT ["chartpilot", "run", "--watches-file=./watches.yaml"]
