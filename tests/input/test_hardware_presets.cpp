// The H200 and B200 presets load with the figures NVIDIA publishes (docs/hardware.md#h200-sxm,
// docs/hardware.md#b200, docs/hardware.md#hgx-h200-and-hgx-b200-nodes). The expected values
// are written from the datasheets here, not read from the presets: NVIDIA's tensor figures are
// sparse, so the dense ones are halved by hand; bidirectional link figures are halved too.
#include <catch2/catch.hpp>
#include <string>

#include "core/units.hpp"
#include "input/presets.hpp"

using namespace clustersim;

namespace {

// A relative tolerance for figures given in TFLOPS, GB and GB/s.
Approx near(double value) {
  return Approx(value).epsilon(1e-9);
}

}  // namespace

TEST_CASE("the HGX H200 cluster preset has the H200's published figures", "[input][presets]") {
  const ClusterSpec c = load_cluster_preset("hgx-h200-2048x8-rail");
  CHECK(c.gpu.name == "h200-sxm");
  // H200 SXM: BF16 1,979 TFLOPS with sparsity -> 989.4 dense (the H100's exact value);
  // FP8 3,958 with sparsity -> 1978.9 dense.
  CHECK(c.gpu.peak(Dtype::bf16) == near(989.4 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp8) == near(1978.9 * kTflops));
  CHECK(c.gpu.hbm_bytes == near(141 * kGB));  // 141 GB HBM3e
  // CUDA's total, measured on an H200 (torch-probe-1.json memory_gib): the memory verdicts' figure.
  CHECK(c.gpu.memory_capacity_bytes() == near(139.8 * kGiB));
  CHECK(c.gpu.hbm_Bps == near(4.8 * kTB));     // 4.8 TB/s
  CHECK(c.gpu.nvlink_Bps == near(450 * kGB));  // NVLink 900 GB/s bidirectional
  CHECK(c.nvlink_Bps == near(450 * kGB));      // the cluster keeps the GPU's NVLink
  CHECK(c.gpu.sm_count == 132);                // the GH100 SXM5's SMs
  CHECK(c.gpu.architecture == GpuArch::hopper);
  // DGX H200: eight GPUs, eight single-port 400 Gb/s ConnectX-7 for the compute fabric.
  CHECK(c.gpus_per_node == 8);
  CHECK(c.nics_per_node == 8);
  CHECK(c.nic_Bps == near(400 * kGbit));
  CHECK(c.rail_optimized);
  CHECK(c.nodes == 2048);
}

TEST_CASE("the HGX B200 cluster preset has the B200's published figures", "[input][presets]") {
  const ClusterSpec c = load_cluster_preset("hgx-b200-2048x8-rail");
  CHECK(c.gpu.name == "b200");
  // HGX B200 per GPU: FP16/BF16 4.5 PFLOPS and FP8 9 PFLOPS with sparsity -> 2,250 and 4,500
  // TFLOPS dense; TF32 2.2 PFLOPS sparse -> 1,100; FP32 75 TFLOPS (no sparsity).
  CHECK(c.gpu.peak(Dtype::bf16) == near(2250 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp16) == near(2250 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp8) == near(4500 * kTflops));
  CHECK(c.gpu.peak(Dtype::tf32) == near(1100 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp32) == near(75 * kTflops));
  CHECK(c.gpu.hbm_bytes == near(180 * kGB));  // 180 GB HBM3e (1,440 GB / 8 in a DGX B200)
  CHECK(c.gpu.memory_capacity_bytes() == near(178.35 * kGiB));  // totalGlobalMem of a B200
  CHECK(c.gpu.hbm_Bps == near(7.7 * kTB));                      // 7.7 TB/s
  CHECK(c.gpu.nvlink_Bps == near(900 * kGB));                   // NVLink 5: 1.8 TB/s bidirectional
  CHECK(c.nvlink_Bps == near(900 * kGB));
  CHECK(c.gpu.pcie_Bps == near(64 * kGB));  // PCIe Gen5 128 GB/s bidirectional
  CHECK(c.gpu.sm_count == 148);             // a B200 device query (NVIDIA gives none)
  CHECK(c.gpu.architecture == GpuArch::blackwell);
  // Published Blackwell kernel figures (docs/microbenchmarks.md#blackwell), not Hopper's.
  CHECK(c.gpu.compute_calibration.ends_with("validation/data/compute_efficiency-blackwell.json"));
  // DGX B200: eight GPUs, 4 OSFP ports for eight single-port 400 Gb/s ConnectX-7.
  CHECK(c.gpus_per_node == 8);
  CHECK(c.nics_per_node == 8);
  CHECK(c.nic_Bps == near(400 * kGbit));
  CHECK(c.rail_optimized);
  CHECK(c.nodes == 2048);
}

TEST_CASE("the GB200 NVL72 cluster preset has the rack's published figures", "[input][presets]") {
  const ClusterSpec c = load_cluster_preset("gb200-nvl72-128x72-rail");
  CHECK(c.gpu.name == "gb200");
  // GB200 NVL72, 72 GPUs: FP16/BF16 360 PFLOPS, FP8 720 PFLOPS, TF32 180 PFLOPS with sparsity,
  // FP32 5,760 TFLOPS -> per GPU dense 360e3 / 72 / 2 = 2,500; 720e3 / 144 = 5,000;
  // 180e3 / 144 = 1,250; 5,760 / 72 = 80.
  CHECK(c.gpu.peak(Dtype::bf16) == near(2500 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp8) == near(5000 * kTflops));
  CHECK(c.gpu.peak(Dtype::tf32) == near(1250 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp32) == near(80 * kTflops));
  // 13.4 TB and 576 TB/s over 72 GPUs: 186.1 GB (186 in the preset) and 8 TB/s.
  CHECK(c.gpu.hbm_bytes == near(186 * kGB));
  // No published CUDA total for a GB200: the memory verdicts take the datasheet's decimal GB.
  CHECK(c.gpu.memory_capacity_bytes() == near(186 * kGB));
  CHECK(c.gpu.hbm_Bps == near(8 * kTB));
  CHECK(c.nvlink_Bps == near(900 * kGB));  // 18 NVLink 5 links, 1.8 TB/s bidirectional
  // One NVLink domain of 72 GPUs per node (the rack), one 400 Gb/s NIC per GPU, 128 racks.
  CHECK(c.gpus_per_node == 72);
  CHECK(c.nics_per_node == 72);
  CHECK(c.nic_Bps == near(400 * kGbit));
  CHECK(c.nodes == 128);
  CHECK(c.total_gpus() == 9216);
}

TEST_CASE("the GB300 NVL72 cluster preset has the rack's published figures", "[input][presets]") {
  const ClusterSpec c = load_cluster_preset("gb300-nvl72-128x72-rail");
  CHECK(c.gpu.name == "gb300");
  CHECK(c.gpu.architecture == GpuArch::blackwell);
  // GB300 NVL72, 72 GPUs: FP16/BF16 360 PFLOPS, FP8 720 PFLOPS, TF32 180 PFLOPS with sparsity
  // -> per GPU dense 360e3 / 144 = 2,500 and 720e3 / 144 = 5,000 (the GB200's); 180e3 / 144 =
  // 1,250; FP32 80 as ML Engineering's table lists it.
  CHECK(c.gpu.peak(Dtype::bf16) == near(2500 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp8) == near(5000 * kTflops));
  CHECK(c.gpu.peak(Dtype::tf32) == near(1250 * kTflops));
  CHECK(c.gpu.peak(Dtype::fp32) == near(80 * kTflops));
  // 288 GB of HBM3e per GPU; 576 TB/s over 72 GPUs: 8 TB/s.
  CHECK(c.gpu.hbm_bytes == near(288 * kGB));
  CHECK(c.gpu.hbm_Bps == near(8 * kTB));
  CHECK(c.nvlink_Bps == near(900 * kGB));  // 130 TB/s over 72 GPUs: 1.8 TB/s bidirectional
  CHECK(c.gpu.compute_calibration.ends_with("validation/data/compute_efficiency-gb300.json"));
  // The GB200 rack's layout with one 800 Gb/s ConnectX-8 per GPU.
  CHECK(c.gpus_per_node == 72);
  CHECK(c.nics_per_node == 72);
  CHECK(c.nic_Bps == near(800 * kGbit));
  CHECK(c.total_gpus() == 9216);
}
