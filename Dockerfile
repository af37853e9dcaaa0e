# The gangplank extender image: `docker build -t REGISTRY/gangplank:TAG .` (docs/deploy.md).
# The Python of constraints.txt (its header says which; `make constraints` resolves it on the
# Python it runs, and tests/test_installed_package.py checks the two agree).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY extender ./extender
# The package alone, no extras, every dependency at its pinned version:
# tests/test_installed_package.py copies the same files, runs this same
# `pip install -c constraints.txt .` into a fresh venv and starts `gangplank serve` from it.
# Keep the two alike.
RUN pip install -c constraints.txt . && rm -rf /src
USER 65532:65532
ENTRYPOINT ["gangplank"]
CMD ["serve", "--in-cluster"]
