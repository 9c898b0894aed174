# PipeLab classroom server: the same command as the README's quick start (bin/serve).
FROM python:3.11-slim

# Torch's CPU build (the classroom server has no GPU; PyPI's default build brings gigabytes of
# CUDA). A host whose pip reaches its packages elsewhere passes its own pip settings as build
# args (tests/docker_image.py does): an empty value leaves pip's default.
ARG PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG PIP_INDEX_URL=
ARG PIP_FIND_LINKS=

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIPELAB_MAX_CONCURRENT_RUNS=1 \
    PIPELAB_DATA_DIR=/data

# WORKDIR would create the app folder as root, and COPY --chown changes what it copies, not
# the folder: made and handed to the app's user first, so the venv can be built inside it.
# /data holds the class's runs (a volume, so they outlive the container).
RUN useradd --create-home --uid 1000 pipelab \
 && mkdir -p /home/pipelab/app /data \
 && chown pipelab:pipelab /home/pipelab/app /data
WORKDIR /home/pipelab/app
USER 1000:1000
# The requirements first: the venv layer is rebuilt only when they change, not with every edit.
COPY --chown=pipelab:pipelab requirements.txt bin/setup-venv ./
RUN mkdir bin && mv setup-venv bin/ && bin/setup-venv requirements.txt
COPY --chown=pipelab:pipelab . .
VOLUME /data

EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD [".venv/bin/python", "-c", "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]
# bin/serve execs streamlit, so it is PID 1 and gets docker stop's SIGTERM itself.
CMD ["bin/serve", "--server.address=0.0.0.0", "--server.port=8501"]
