# PipeLab classroom server: the same command as the README's quick start (bin/serve).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIPELAB_MAX_CONCURRENT_RUNS=1

RUN useradd --create-home --uid 1000 pipelab
WORKDIR /home/pipelab/app
USER 1000:1000
COPY --chown=pipelab:pipelab . .
# Build the venv at image build time so the container starts at once.
RUN bin/setup-venv requirements.txt

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD [".venv/bin/python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]
CMD ["bin/serve", "--server.address=0.0.0.0", "--server.port=8501"]
