# The catalog image, for docker and podman users; `chartpilot catalog build`
# builds the same image without a container engine.
# The base image provides /bin/opm, which serves the catalog over gRPC.
FROM quay.io/operator-framework/opm:latest

ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]

# The file-based catalog, and its serving cache built at image build time
# so that the catalog pod is ready sooner.
ADD build/catalog /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

# Where OLM finds the catalog in the image.
LABEL operators.operatorframework.io.index.configs.v1=/configs
